# Types each line given into a fresh interactive zsh, followed by TAB, and appends the line as
# completion left it to OUT (one line each). $fpath is DIR, then zsh's own completion folders, and
# compinit runs as in a user's .zshrc: a completion saved in DIR is autoloaded the README's way.
# usage: zsh -f zsh-complete.zsh DIR CWD OUT LINE...  (test/component/commands/completion.test.ts)
zmodload zsh/zpty || exit 3
dir=$1 cwd=$2 out=$3; shift 3
zpty -b z zsh -f -i
# compinit reads every folder of $fpath: only zsh's completion folders (where a system has them) keep it quick.
zpty -w z "PS1=; cd ${(q)cwd}; comp=(\${(M)fpath:#*/Completion*}); (( \$#comp )) || comp=(\$fpath)"
zpty -w z "fpath=(${(q)dir} \$comp); autoload -Uz compinit; compinit -u -D"
# TAB completes, then writes the line out and clears it for the next one.
zpty -w z "tab() { zle complete-word; print -r -- \"\$BUFFER\" >> ${(q)out}; zle kill-whole-line; }; zle -N tab; bindkey '^I' tab"
for line in "$@"; do zpty -w -n z "$line"$'\t'; done
zpty -w z exit
integer i
for i in {1..600}; do
  (( $(wc -l < $out) >= $# )) && break
  sleep 0.05
done
zpty -d z
