/**
 * `campaign-sync completion bash|zsh|fish`: a completion script for the shell, built from the
 * program's own commands and options (cli.ts passes them), so it can never fall behind them.
 */
import { UsageError } from '../errors.js';

export interface CompletionOption {
  /** `--report-type` */
  flag: string;
  /** `-o`, when it has a short form. */
  short?: string | undefined;
  /** Takes a value. */
  value: boolean;
  /** Allowed values, when fixed. */
  choices: string[];
  /** Its value is a file or folder name (`--db <path>`): offer file names. Other free values (`--page-size <n>`) offer nothing. */
  files: boolean;
  description: string;
}

export interface CompletionCommand {
  name: string;
  description: string;
  options: CompletionOption[];
  /** The values of its argument, when fixed (`completion bash`). */
  args?: readonly string[];
}

/** The shells `completion` writes for: what its argument accepts, and what it offers for it. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;

/** An option's names: `--output` and `-o`. */
function names(o: CompletionOption): string[] {
  return o.short === undefined ? [o.flag] : [o.flag, o.short];
}

/** Single-quoted for a POSIX shell. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function bash(commands: CompletionCommand[]): string {
  const cases = commands
    .map((c) => {
      const valued = c.options.filter((o) => o.value);
      const choiceCases = valued
        .filter((o) => o.choices.length > 0)
        .map((o) => `        ${names(o).join('|')}) COMPREPLY=($(compgen -W ${quote(o.choices.join(' '))} -- "$cur")); return ;;`);
      const fileCases = valued.filter((o) => o.choices.length === 0 && o.files).flatMap(names);
      // A number, a duration, an id: nothing to offer, and file names would only mislead.
      const freeCases = valued.filter((o) => o.choices.length === 0 && !o.files).flatMap(names);
      return [
        `    ${c.name})`,
        '      case "$prev" in',
        ...choiceCases,
        ...(fileCases.length > 0 ? [`        ${fileCases.join('|')}) _campaign_sync_files; return ;;`] : []),
        ...(freeCases.length > 0 ? [`        ${freeCases.join('|')}) return ;;`] : []),
        '      esac',
        // Its argument's values, unless an option is being typed.
        ...(c.args && c.args.length > 0
          ? [`      [[ $cur != -* ]] && { COMPREPLY=($(compgen -W ${quote(c.args.join(' '))} -- "$cur")); return; }`]
          : []),
        `      COMPREPLY=($(compgen -W ${quote(c.options.flatMap(names).join(' '))} -- "$cur")); return ;;`,
      ].join('\n');
    })
    .join('\n');
  return `# bash completion for campaign-sync. Load it with:
#   source <(campaign-sync completion bash)
# or save it as ~/.local/share/bash-completion/completions/campaign-sync

# File names one per line, not split on spaces; -o filenames makes bash quote them and add / to folders.
_campaign_sync_files() {
  local f
  compopt -o filenames 2>/dev/null
  COMPREPLY=()
  while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -f -- "$cur")
}

_campaign_sync() {
  local cur prev cmd
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd="\${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W ${quote(['help', '--help', '--version', ...commands.map((c) => c.name)].join(' '))} -- "$cur"))
    return
  fi
  case "$cmd" in
${cases}
  esac
}
complete -F _campaign_sync campaign-sync
`;
}

function zsh(commands: CompletionCommand[]): string {
  const bracket = (t: string) => t.replace(/[[\]:'\\]/g, (c) => `\\${c}`);
  const subs = commands.map((c) => `    ${quote(`${c.name}:${bracket(c.description)}`)}`).join('\n');
  const cases = commands
    .map((c) => {
      const args = c.options.flatMap((o) => {
        // An action of one space: zsh shows the message and offers nothing.
        const action = o.choices.length > 0 ? `:value:(${o.choices.join(' ')})` : !o.value ? '' : o.files ? ':value:_files' : ':value: ';
        return names(o).map((flag) => `        ${quote(`${flag}[${bracket(o.description)}]${action}`)}`);
      });
      if (c.args && c.args.length > 0) args.push(`        ${quote(`1:argument:(${c.args.join(' ')})`)}`);
      return [`    ${c.name})`, '      _arguments \\', `${args.join(' \\\n')}`, '      ;;'].join('\n');
    })
    .join('\n');
  return `#compdef campaign-sync
# zsh completion for campaign-sync. Save it as _campaign-sync in a folder of $fpath, or:
#   source <(campaign-sync completion zsh)
_campaign_sync() {
  local -a subcommands
  subcommands=(
${subs}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' subcommands
    return
  fi
  local cmd=$words[2]
  shift words
  (( CURRENT-- ))
  case $cmd in
${cases}
  esac
}
# Autoloaded from $fpath, this file is the body of _campaign-sync and runs on each TAB: it must
# complete, not only register (else the first TAB of every shell completes nothing). Sourced, it registers.
if [[ $zsh_eval_context[-1] == (loadautofunc|shfunc) ]]; then
  _campaign_sync "$@"
else
  compdef _campaign_sync campaign-sync
fi
`;
}

function fish(commands: CompletionCommand[]): string {
  const lines = [
    '# fish completion for campaign-sync. Save it as ~/.config/fish/completions/campaign-sync.fish',
    'complete -c campaign-sync -f',
  ];
  const names = commands.map((c) => c.name).join(' ');
  for (const c of commands) {
    lines.push(`complete -c campaign-sync -n ${quote(`not __fish_seen_subcommand_from ${names}`)} -a ${c.name} -d ${quote(c.description)}`);
    if (c.args && c.args.length > 0)
      lines.push(`complete -c campaign-sync -n ${quote(`__fish_seen_subcommand_from ${c.name}`)} -a ${quote(c.args.join(' '))}`);
    for (const o of c.options) {
      const short = o.short === undefined ? '' : ` -s ${o.short.replace(/^-/, '')}`;
      const parts = [
        `complete -c campaign-sync -n ${quote(`__fish_seen_subcommand_from ${c.name}`)} -l ${o.flag.replace(/^--/, '')}${short}`,
      ];
      if (o.choices.length > 0) parts.push(`-x -a ${quote(o.choices.join(' '))}`);
      else if (o.value) parts.push(o.files ? '-r -F' : '-x');
      parts.push(`-d ${quote(o.description)}`);
      lines.push(parts.join(' '));
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Prints the script for `shell`; an unknown shell is a usage error. */
export function completion(shell: string | undefined, commands: CompletionCommand[], write: (text: string) => void): number {
  const name = (shell ?? '').toLowerCase();
  if (!(SHELLS as readonly string[]).includes(name))
    throw new UsageError(`completion: the shell must be ${SHELLS.join(', ')} (got "${shell ?? ''}")`);
  write(name === 'bash' ? bash(commands) : name === 'zsh' ? zsh(commands) : fish(commands));
  return 0;
}
