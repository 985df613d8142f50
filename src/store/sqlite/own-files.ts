/** The files that hold a SQLite mirror. */

import { canonicalPath } from '../../core/fs/private-file.js';
import type { MirrorTarget } from '../port.js';

/** The database and the files beside it: overwriting any of them loses the mirror's data or its lock. */
const DB_FILES = ['', '-wal', '-shm', '-journal', '.lock', '.lock.info'];

/** Each as the file it is, whatever spelling or links lead there (lock.ts canonicalPath). */
export function sqliteOwnFiles(t: MirrorTarget): string[] {
  const db = canonicalPath(t.path);
  return DB_FILES.map((suffix) => `${db}${suffix}`);
}
