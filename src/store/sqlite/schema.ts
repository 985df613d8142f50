/**
 * The mirror's schema. `PRAGMA user_version` holds the schema version; each entry
 * of MIGRATIONS (store/sqlite/migrations/) moves one version up, so a database written by an older release
 * is upgraded in place.
 */
import type Database from 'better-sqlite3';
import { errorCode, UsageError } from '../../errors.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

export const SCHEMA_VERSION = MIGRATIONS.length;

/** The schema version a database holds (a read-only open does not migrate it). */
export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** The names of a table's columns, the mirror's and any an analyst added (none when the table is absent). */
export function columnNames(db: Database.Database, table: string): string[] {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>).map((c) => c.name);
}

/**
 * Refuses a schema version this release cannot open: a newer one, and a negative one, which no
 * campaign-sync writes (a hand-edited `PRAGMA user_version`).
 */
export function checkSchemaVersion(version: number, path: string): void {
  if (version > SCHEMA_VERSION) {
    throw new UsageError(`${path} was written by a newer campaign-sync (schema ${version}, this one knows ${SCHEMA_VERSION}); upgrade`);
  }
  if (version < 0 || !Number.isInteger(version)) {
    throw new UsageError(
      `${path} is not a campaign-sync mirror: its schema version (PRAGMA user_version) is ${version}, and campaign-sync writes 1 to ${SCHEMA_VERSION}`,
    );
  }
}

/**
 * The schema version of a database campaign-sync may open, or a UsageError (exit 2) for one it may
 * not: a version it cannot read, or a version-0 file with tables of its own (somebody else's
 * database). Only reads: run it before anything changes the file (its mode, its journal mode).
 */
export function checkOurs(db: Database.Database, path: string): number {
  const version = schemaVersion(db);
  checkSchemaVersion(version, path);
  if (version === 0) {
    const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    if (tables.n > 0) throw new UsageError(`${path} already holds tables that are not campaign-sync's; pick another --db`);
  }
  return version;
}

/**
 * A migration step that fails on SQL (a table it creates is there already, one it reads is not) met
 * tables that are not those of the version the file claims: not a storage failure (74) but a file this
 * release cannot open (2). Disk full, read-only, I/O and busy errors carry their own codes.
 */
function isSchemaMismatch(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'SQLITE_ERROR' || code?.startsWith('SQLITE_CONSTRAINT') === true;
}

/** Brings `db` to `target` (the current version; tests pass an older one to build what a release wrote). */
export function migrate(db: Database.Database, path: string, target = SCHEMA_VERSION): void {
  const version = checkOurs(db, path);
  let moved = 0;
  for (let v = version; v < target; v++) {
    const step = MIGRATIONS[v] as Migration;
    try {
      db.transaction(() => {
        db.exec(step.sql);
        if (step.run) moved += step.run(db);
        db.pragma(`user_version = ${v + 1}`);
      })();
    } catch (err) {
      if (!isSchemaMismatch(err)) throw err;
      throw new UsageError(
        `${path} is not a mirror this campaign-sync can open: its tables do not match its schema version ${version} ` +
          `(PRAGMA user_version); upgrading it from schema ${v} to ${v + 1} failed and was rolled back: ${(err as Error).message}`,
      );
    }
  }
  if (moved > 0) giveBackSpace(db);
}

/**
 * After a migration that rewrote rows, VACUUM hands the freed pages back to the file system. It needs
 * free disk about the size of the database and no other reader: when it cannot run, the freed pages
 * are reused by later writes instead, and nothing is lost.
 */
function giveBackSpace(db: Database.Database): void {
  try {
    db.exec('VACUUM');
  } catch {
    // SQLITE_FULL, SQLITE_BUSY: the migration itself is committed.
  }
}
