/**
 * Values (a --db path, a URL) inside the commands we print for people to paste: each must reach the
 * shell as one word that runs nothing. `team mirror.db` pasted bare was two arguments, and
 * `$(…)` in a file name ran.
 */
import { showText } from './escape.js';

/** Characters every POSIX shell (and zsh, fish) takes literally anywhere in a word. */
const PLAIN = /^[\p{L}\p{N}_@%+:,./-]+$/u;

/**
 * `value` as one shell word for bash, zsh and dash: as it is when plain (`m.db`, for readability),
 * else single-quoted with `'` written `'\''`. A value holding what the terminal would act on (ESC,
 * other controls, C1, bidi) is written `$'…'` with escapes instead (bash, zsh): the escapes keep the
 * terminal safe, and pasted they give back the exact value.
 */
export function shellWord(value: string): string {
  if (PLAIN.test(value)) return value;
  if (showText(value) === value) return `'${value.replaceAll("'", "'\\''")}'`;
  let out = '';
  for (const c of value) {
    if (c === '\\' || c === "'") out += `\\${c}`;
    else if (showText(c) === c) out += c;
    else out += ansiC(c);
  }
  return `$'${out}'`;
}

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** One unsafe character inside $'…': \xNN below 0x80 (one byte), else \uNNNN, so the shell writes its UTF-8. */
function ansiC(c: string): string {
  const code = c.codePointAt(0) as number;
  return NAMED[c] ?? (code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}
