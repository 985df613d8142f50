/**
 * `mkdir -p` one folder at a time. Node's `mkdirSync(…, { recursive: true })` loops for ever, at full
 * CPU and deaf to signals, where a parent cannot be created and says ENOENT for it (under /proc: a
 * `--out /proc/x/out` or an `XDG_STATE_HOME=/proc`, seen on Node 20). Here each missing folder is
 * made once, from the top down, and the first failure is thrown as the system gave it. A folder this
 * makes gets exactly the mode asked for, whatever the umask (0750 for a group of readers stays 0750
 * under `umask 077`); one that exists keeps its own.
 */
import { closeSync, constants, fchmodSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { errorCode } from '../../errors.js';

/** Creates `path` and its missing parents (new ones with `mode`); ENOTDIR when `path` is there and not a folder. */
export function makeFolders(path: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(path); ; ) {
    try {
      if (statSync(at).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${at}'`), { code: 'ENOTDIR', path: at });
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') throw err;
    }
    missing.unshift(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const folder of missing) {
    try {
      mkdirSync(folder, { mode });
    } catch (err) {
      // Made meanwhile by another process: fine, as with mkdir -p (and its mode is its maker's).
      if (errorCode(err) !== 'EEXIST') throw err;
      continue;
    }
    setMode(folder, mode);
  }
}

/** The umask may have taken bits of `mode` away: set through a descriptor of the folder itself, never a link put there since. */
function setMode(folder: string, mode: number): void {
  const fd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY | (constants.O_NOFOLLOW ?? 0));
  try {
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}
