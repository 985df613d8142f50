/**
 * Values (a --db path, a URL) inside the commands we print for people to paste: each must reach the
 * shell as one word that runs nothing. `team mirror.db` pasted bare was two arguments, and
 * `$(…)` in a file name ran.
 */
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import { currentIo } from '../core/io.js';
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

/**
 * This program as people can run it again where its hints are printed: `campaign-sync` when that
 * name on PATH is this very program (a global install), else the launcher's path, relative when under
 * the working folder (`./node_modules/.bin/campaign-sync`, `./bin/campaign-sync.js` in a clone), as
 * one shell word. Never a bare name the shell's PATH does not lead to, and never npx, which fetches a
 * name it cannot find from the registry. Under npm exec (npx), PATH is npm's, not the shell's.
 */
export function commandName(launcher = currentIo().launcher, env = currentIo().env, cwd = process.cwd()): string {
  const self = realOrNull(launcher);
  const path = env.npm_command === 'exec' ? '' : (env.PATH ?? '');
  for (const dir of path.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, 'campaign-sync');
    if (!executable(candidate)) continue;
    // The shell runs the first one on PATH.
    if (self !== null && realOrNull(candidate) === self) return 'campaign-sync';
    break;
  }
  const absolute = resolve(cwd, launcher);
  const inside = relative(cwd, absolute);
  return shellWord(inside !== '' && !inside.startsWith('..') && !isAbsolute(inside) ? `./${inside}` : absolute);
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
