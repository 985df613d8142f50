/**
 * Nothing left by a run that failed before it committed anything (a first pull with a wrong key or a
 * refused connection): the database it created is removed again, with its -wal and -shm, so that no
 * empty mirror stays behind for `status` to call healthy-but-empty ("No streams yet", exit 0) and
 * the next run starts as the first did. Only a database this run created, and only while it holds
 * nothing but its schema and the bookkeeping written with it; a database that was there before, or
 * one another connection has open, is left as it is.
 */
import { rmSync } from 'node:fs';
import { closeLeavingNoWalFiles, type Db } from './db.js';
import { SQLITE_SIDES } from './private-db.js';

/**
 * Tables a new database fills as it is made or opened, whatever is synced: `meta` (schema version,
 * the destination it feeds, the service it mirrors, when a retention ran), the change numbers of
 * `--since-last`, and the counters `--metrics-file` keeps (a failed first pull's metrics file says
 * it failed; the counters start with the mirror, which a failure before any commit does not leave).
 */
const BOOKKEEPING = new Set(['meta', 'change_counter', 'change_times', 'metric_counters']);

/**
 * Whether the database holds nothing a run committed: every table empty but the bookkeeping, and
 * the NDJSON files it claimed (ndjson_files) still at 0 bytes committed. Any table a later schema
 * adds counts as data: a new kind of row is never taken for nothing.
 */
export function isBare(db: Db): boolean {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
  for (const table of tables) {
    if (BOOKKEEPING.has(table)) continue;
    const where = table === 'ndjson_files' ? ' WHERE committed_bytes > 0' : '';
    // Names from the database's own catalogue, quoted.
    if (
      db
        .prepare(`SELECT EXISTS (SELECT 1 FROM "${table.replace(/"/g, '""')}"${where})`)
        .pluck()
        .get() === 1
    )
      return false;
  }
  return true;
}

/**
 * Removes the database at `path`, which this run created, and closes `db`, when it is bare and no
 * other connection has it open; else leaves it and returns false (the caller closes it as usual).
 * The caller holds the run lock (no pull can be writing). SQLite gives up WAL mode only where no
 * other connection is open (a `status` reading it keeps it), and the exclusive lock taken then keeps
 * any other out until the files are gone; `campaigns`, which writes its list without the run lock,
 * is kept out the same way, and the emptiness is checked again under that lock.
 */
export function discardBareDatabase(db: Db, path: string): boolean {
  let left = false;
  // Back to WAL when it stays: the mode is the file's, and the next open would set it again anyway.
  const stay = () => {
    try {
      if (db.inTransaction) db.exec('ROLLBACK');
      if (left) db.pragma('journal_mode = WAL');
    } catch {
      // The next open sets WAL mode.
    }
    return false;
  };
  try {
    if (!isBare(db)) return false;
    db.pragma('busy_timeout = 0');
    // Refused (SQLITE_BUSY) while another connection is open; done, SQLite has removed the -wal.
    if (db.pragma('journal_mode = DELETE', { simple: true }) !== 'delete') return false;
    left = true;
    db.exec('BEGIN EXCLUSIVE');
    if (!isBare(db)) return stay();
    // The -wal and -shm first: a WAL left beside a missing database would be replayed into the next one made there.
    for (const side of [...SQLITE_SIDES].reverse()) rmSync(path + side, { force: true });
    rmSync(path, { force: true });
    db.exec('ROLLBACK');
  } catch {
    // Another connection (busy), or storage that refuses: the database stays, closed by the caller.
    return stay();
  }
  closeLeavingNoWalFiles(db);
  return true;
}
