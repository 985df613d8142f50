import { readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * The file a path names, whatever spelling or links lead there: the path resolved through its links
 * (its folder's, when it does not exist yet). Two processes given `m.db` through a linked folder, or
 * `./m.db` and its absolute path, lock the same `<db>.lock`: the lock sits beside the file SQLite
 * opens. (A link at a database's own name is refused before: checkDbPath.)
 */
export function canonicalPath(path: string): string {
  let at = resolve(path);
  // A link to a database not created yet is followed too: SQLite creates the file at its end.
  for (let hops = 0; hops < 40; hops++) {
    try {
      return realpathSync(at);
    } catch {}
    let target: string;
    try {
      target = readlinkSync(at);
    } catch {
      break;
    }
    at = resolve(dirname(at), target);
  }
  try {
    return join(realpathSync(dirname(at)), basename(at));
  } catch {
    return at;
  }
}
