/**
 * Opening the SQLite mirror: owner-only file modes, WAL, and the schema (versioned, so later
 * releases can migrate).
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { UsageError } from '../errors.js';
import { migrate, SCHEMA_VERSION } from './schema.js';

export type Db = Database.Database;

/**
 * Creates (if needed) a file readable by the owner only, whatever the umask, and forces 0600 on an
 * existing one: the mirror holds candidates' e-mail addresses.
 */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'a', 0o600));
    chmodSync(path, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`cannot create ${path} (${code})`);
  }
}

export interface OpenOptions {
  /** Open an existing database only (status, export): a missing file is a usage error. */
  mustExist?: boolean;
  readonly?: boolean;
}

/** Opens the database at `path`, creating and migrating it as needed. */
export function openDatabase(path: string, opts: OpenOptions = {}): Db {
  if (opts.mustExist && !existsSync(path)) {
    throw new UsageError(`no database at ${path} (run \`campaign-sync pull\` first, or pass --db)`);
  }
  if (!opts.readonly) createPrivateFile(path);
  let db: Db;
  try {
    db = new Database(path, { readonly: opts.readonly === true, fileMustExist: opts.mustExist === true });
  } catch (err) {
    throw new UsageError(`cannot open ${path}: ${(err as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 10000');
    if (opts.readonly) {
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) throw new UsageError(`${path} was written by a newer campaign-sync (schema ${version}); upgrade`);
      return db;
    }
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a process crash (kill -9 included) loses no committed page; only a power
    // loss may drop the last pages, and never leaves records and checkpoints out of step.
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 10000');
    db.pragma('foreign_keys = OFF');
    migrate(db, path);
    for (const suffix of ['-wal', '-shm']) if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
    return db;
  } catch (err) {
    db.close();
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${path} is not a campaign-sync database: ${(err as Error).message}`);
  }
}
