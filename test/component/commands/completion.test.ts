/**
 * `completion bash|zsh|fish`: each script is valid for its shell and offers every command,
 * option and enum value of the program. All three shells complete for real here (.ci/run installs zsh
 * and fish; under CI their absence fails): bash through COMP_WORDS, fish through `complete -C`, zsh
 * installed in $fpath as the README says and driven in a pseudo-terminal (zsh/zpty), TAB by TAB.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { canUse, needs } from '../../helpers/tools.js';

const program = buildProgram(new AbortController().signal, { exitCode: 0 });
const sh = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** Every shown option that takes a fixed set of values, by command: what each shell must offer after it. */
const fixed = program.commands.flatMap((c) =>
  c.options
    .filter((o) => !o.hidden && o.argChoices !== undefined)
    .map((o) => ({ cmd: c.name(), flag: o.long as string, values: o.argChoices as string[] })),
);

/** A folder with a file name that holds a space, and one that starts like every value (so a file offered instead of a value shows). */
function filesDir(): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'my file.db'), '');
  for (const f of fixed) for (const v of f.values) writeFileSync(join(dir, `${v.slice(0, 1)}-not-a-value`), '');
  return dir;
}

async function script(shell: string): Promise<string> {
  const r = await runCli(['completion', shell]);
  expect(r.code).toBe(0);
  const file = join(tempDir(), `c.${shell}`);
  writeFileSync(file, r.stdout);
  return file;
}

/** bash: COMPREPLY for each command line (its last word is the one completed), in one bash. */
function bashComplete(file: string, lines: string[][], cwd: string): string[][] {
  const body = lines
    .map(
      (w) =>
        `COMP_WORDS=(${w.map(sh).join(' ')}); COMP_CWORD=${w.length - 1}; COMPREPLY=(); _campaign_sync; printf '%s\\n' "\${COMPREPLY[@]}"; echo '<end>'`,
    )
    .join('\n');
  const out = execFileSync('bash', ['-c', `source ${sh(file)}\n${body}`], { encoding: 'utf8', cwd });
  return out
    .split('<end>\n')
    .slice(0, lines.length)
    .map((o) => o.split('\n').filter((l) => l !== ''));
}

/** fish: the candidates of `complete -C` for each command line, descriptions dropped, in one fish. */
function fishComplete(file: string, lines: string[], cwd: string): string[][] {
  const body = lines.map((l) => `complete -C ${sh(l)}; echo '<end>'`).join('\n');
  const out = execFileSync('fish', ['--no-config', '-c', `source ${sh(file)}\n${body}`], { encoding: 'utf8', cwd });
  return out
    .split('<end>\n')
    .slice(0, lines.length)
    .map((o) =>
      o
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split('\t')[0] as string),
    );
}

/** zsh, the README's way: the script saved as _campaign-sync in a folder of $fpath, then each line + TAB in one new shell. */
function zshComplete(file: string, lines: string[], cwd: string): string[] {
  const dir = join(tempDir(), 'site-functions');
  mkdirSync(dir);
  writeFileSync(join(dir, '_campaign-sync'), readFileSync(file));
  const out = join(tempDir(), 'buffers.txt');
  writeFileSync(out, '');
  execFileSync('zsh', ['-f', join(import.meta.dirname, '..', '..', 'helpers', 'zsh-complete.zsh'), dir, cwd, out, ...lines], {
    encoding: 'utf8',
    timeout: 45_000,
  });
  return readFileSync(out, 'utf8').split('\n').slice(0, lines.length);
}

describe('completion', () => {
  it('bash: valid, and completes commands, options and enum values', async () => {
    const r = await runCli(['completion', 'bash']);
    expect(r.code).toBe(0);
    const file = join(tempDir(), 'c.bash');
    writeFileSync(file, r.stdout);
    execFileSync('bash', ['-n', file]);
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _campaign_sync; echo "\${COMPREPLY[@]}"`,
        ],
        {
          encoding: 'utf8',
        },
      ).trim();
    expect(complete(['campaign-sync', '']).split(' ')).toEqual(expect.arrayContaining(program.commands.map((c) => c.name())));
    expect(complete(['campaign-sync', 'pull', '--report-type', ''])).toBe('DETAILED OVERALL');
    expect(complete(['campaign-sync', 'export', '--format', ''])).toBe('csv ndjson parquet');
    for (const cmd of program.commands) {
      const offered = complete(['campaign-sync', cmd.name(), '--']).split(' ');
      for (const opt of cmd.options) {
        // Options kept out of --help (watch's --full, --since, --until: refused) are not offered either.
        if (opt.hidden) expect(offered, `${cmd.name()} ${opt.long}`).not.toContain(opt.long);
        else expect(offered, `${cmd.name()} ${opt.long}`).toContain(opt.long);
      }
    }
    expect(complete(['campaign-sync', 'watch', '--']).split(' ')).not.toContain('--full');
    expect(complete(['campaign-sync', 'pull', '--']).split(' ')).toEqual(expect.arrayContaining(['--full', '--since', '--until']));
  });

  for (const shell of ['zsh', 'fish']) {
    it(`${shell}: valid syntax, every command and option named`, async () => {
      const r = await runCli(['completion', shell]);
      expect(r.code).toBe(0);
      for (const cmd of program.commands) {
        expect(r.stdout).toContain(cmd.name());
        for (const opt of cmd.options) {
          if (opt.hidden) continue;
          expect(r.stdout, `${cmd.name()} ${opt.long}`).toContain(shell === 'fish' ? `-l ${opt.long?.slice(2)}` : `${opt.long}[`);
        }
      }
      if (shell === 'fish') expect(r.stdout).not.toMatch(/__fish_seen_subcommand_from watch' -l (full|since|until)\b/);
      if (!canUse(shell)) return;
      const file = join(tempDir(), `c.${shell}`);
      writeFileSync(file, r.stdout);
      execFileSync(shell, ['-n', file]);
      if (shell === 'zsh') {
        // Sourced (`source <(…)`, eval, or from a function), the script registers and completes nothing.
        const loads = `compdef() { print -r -- "compdef $*"; }; _campaign_sync() { print called; }; source ${file}; eval "$(<${file})"; f() { source ${file}; }; f`;
        expect(execFileSync('zsh', ['-f', '-c', loads], { encoding: 'utf8' })).toBe('compdef _campaign_sync campaign-sync\n'.repeat(3));
      }
    });
  }

  it('bash: a file name with a space is one completion', async () => {
    const file = await script('bash');
    const [db, out] = bashComplete(
      file,
      [
        ['campaign-sync', 'pull', '--db', 'my'],
        ['campaign-sync', 'export', '--output', 'my'],
      ],
      filesDir(),
    );
    expect(db).toEqual(['my file.db']);
    expect(out).toEqual(['my file.db']);
    // -o filenames is what makes bash quote it on the line: set from inside the function.
    expect(readFileSync(file, 'utf8')).toMatch(/compopt -o filenames/);
  });

  it('an option whose value is a number, a duration or an id offers nothing; one that takes a path offers files', async () => {
    const cwd = filesDir();
    // Free values as the program declares them (not a path, no fixed set): none may offer 'my file.db'.
    const free = program.commands.flatMap((c) =>
      c.options
        .filter((o) => !o.hidden && (o.required || o.optional) && o.argChoices === undefined && !/<(path|file|dir)>/.test(o.flags))
        .map((o) => ({ cmd: c.name(), flag: o.long as string })),
    );
    expect(free.map((f) => f.flag)).toEqual(expect.arrayContaining(['--page-size', '--interval', '--campaign', '--rate-limit']));
    const lines = free.map((f) => ['campaign-sync', f.cmd, f.flag, 'my']);
    const bash = bashComplete(
      await script('bash'),
      [...lines, ['campaign-sync', 'pull', '--config', 'my'], ['campaign-sync', 'export', '-o', 'my']],
      cwd,
    );
    for (const [i, f] of free.entries()) expect(bash[i], `bash: ${f.cmd} ${f.flag}`).toEqual([]);
    expect(bash[free.length], 'bash: --config <file>').toEqual(['my file.db']);
    // The short form names the same option (-o, --output <file>): it offered option names.
    expect(bash[free.length + 1], 'bash: export -o').toEqual(['my file.db']);
    if (canUse('fish')) {
      const fish = fishComplete(
        await script('fish'),
        [...lines, ['campaign-sync', 'watch', '--out', 'my']].map((l) => l.join(' ')),
        cwd,
      );
      for (const [i, f] of free.entries()) expect(fish[i], `fish: ${f.cmd} ${f.flag}`).toEqual([]);
      expect(fish[free.length], 'fish: --out <dir>').toEqual(['my file.db']);
      expect(fishComplete(await script('fish'), ['campaign-sync export -o my'], cwd)[0], 'fish: export -o').toEqual(['my file.db']);
    }
    if (canUse('zsh')) {
      const typed = [
        'campaign-sync pull --page-size my',
        'campaign-sync watch --interval my',
        'campaign-sync export --output my',
        'campaign-sync export -o my',
      ];
      expect(zshComplete(await script('zsh'), typed, cwd)).toEqual([
        typed[0],
        typed[1],
        'campaign-sync export --output my\\ file.db ',
        'campaign-sync export -o my\\ file.db ',
      ]);
    }
  });

  it('completion <TAB> offers the shells (bash, fish; zsh below)', async () => {
    const cwd = filesDir();
    expect(bashComplete(await script('bash'), [['campaign-sync', 'completion', '']], cwd)).toEqual([['bash', 'zsh', 'fish']]);
    // fish sorts what it offers; zsh is checked with the others in one shell (below: its start is slow).
    if (canUse('fish')) expect(fishComplete(await script('fish'), ['campaign-sync completion '], cwd)).toEqual([['bash', 'fish', 'zsh']]);
  });

  it('every option with a fixed set completes its values, not file names, in bash and fish', async () => {
    const cwd = filesDir();
    // A line typed as a user types it, where file names must not be offered; then every option the program declares with choices.
    const cases = [{ cmd: 'watch', flag: '--compression', values: ['auto', 'gzip', 'off'] }, ...fixed];
    const lines = cases.map((f) => ['campaign-sync', f.cmd, f.flag, '']);
    const bash = bashComplete(await script('bash'), lines, cwd);
    for (const [i, f] of cases.entries()) expect(bash[i], `bash: ${f.cmd} ${f.flag}`).toEqual(f.values);
    // Each comes from the option's own choices (cli.ts), the list its parser accepts.
    expect(fixed.map((f) => f.flag)).toEqual(expect.arrayContaining(['--compression', '--type', '--report-type', '--format', '--table']));
    if (!canUse('fish')) return;
    const fish = fishComplete(
      await script('fish'),
      lines.map((l) => l.join(' ')),
      cwd,
    );
    for (const [i, f] of cases.entries()) expect(fish[i], `fish: ${f.cmd} ${f.flag}`).toEqual([...f.values].sort());
  });

  it('zsh, installed in $fpath: the first TAB completes, and so do fixed values, file names and shells', async (ctx) => {
    needs(ctx, 'zsh');
    // A value typed up to where it is unique among its set: TAB must finish it (a file name would
    // start the same: filesDir() holds one per first letter).
    const unique = (v: string, all: string[]) => {
      for (let n = 1; n < v.length; n++) if (all.filter((w) => w.startsWith(v.slice(0, n))).length === 1) return v.slice(0, n);
      return v;
    };
    const cases = [
      { typed: 'campaign-sync wat', want: 'campaign-sync watch ' },
      { typed: 'campaign-sync export --tab', want: 'campaign-sync export --table ' },
      { typed: 'campaign-sync pull --db my', want: 'campaign-sync pull --db my\\ file.db ' },
      { typed: 'campaign-sync completion f', want: 'campaign-sync completion fish ' },
      { typed: 'campaign-sync watch --compression g', want: 'campaign-sync watch --compression gzip ' },
      ...fixed.map((f) => {
        const v = f.values[f.values.length - 1] as string;
        return { typed: `campaign-sync ${f.cmd} ${f.flag} ${unique(v, f.values)}`, want: `campaign-sync ${f.cmd} ${f.flag} ${v} ` };
      }),
    ];
    const got = zshComplete(
      await script('zsh'),
      cases.map((c) => c.typed),
      filesDir(),
    );
    expect(got).toEqual(cases.map((c) => c.want));
  });

  it('an unknown shell is a usage error', async () => {
    const r = await runCli(['completion', 'tcsh']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the shell must be bash, zsh, fish/);
  });
});
