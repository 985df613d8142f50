/**
 * The mirror's schema (PRODUCT.md §5). `PRAGMA user_version` holds the schema version; each entry
 * of MIGRATIONS moves one version up, so a database written by an older release is upgraded in place.
 */
import type Database from 'better-sqlite3';
import { errorCode, UsageError } from '../errors.js';
import { V8_SQL } from './changes.js';
import { V5_LINKS } from './links.js';
import { compactStored, V6_SQL } from './schema-v6.js';
import { V5_INDEXES, V5_VIEWS } from './views.js';

const V1 = `
CREATE TABLE campaigns (
  id TEXT PRIMARY KEY,
  name TEXT,
  display_name TEXT,
  type TEXT,
  created_at TEXT,
  raw TEXT NOT NULL,
  seen_at TEXT
);
CREATE TABLE session_results (
  id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  user_id TEXT,
  user_email TEXT,
  session_id TEXT,
  scenario_id TEXT,
  scenario_name TEXT,
  scenario_type TEXT,
  score REAL,
  cefr TEXT,
  feedback TEXT,
  additional_scores TEXT,
  created_at TEXT,
  updated_at TEXT,
  order_index INTEGER NOT NULL,
  raw TEXT NOT NULL
);
CREATE INDEX session_results_campaign ON session_results (campaign_id, order_index);
CREATE TABLE role_results (
  id TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  user_id TEXT,
  user_email TEXT,
  recommendation_status TEXT,
  overall_score REAL,
  cefr TEXT,
  additional_scores TEXT,
  report_type TEXT,
  created_at TEXT,
  updated_at TEXT,
  order_index INTEGER NOT NULL,
  raw TEXT NOT NULL
);
CREATE INDEX role_results_campaign ON role_results (campaign_id, order_index);
CREATE TABLE score_details (
  id TEXT PRIMARY KEY,
  role_result_id TEXT NOT NULL,
  campaign_id TEXT,
  user_id TEXT,
  user_email TEXT,
  scenario_id TEXT,
  scenario_name TEXT,
  scenario_type TEXT,
  session_id TEXT,
  score REAL,
  feedback TEXT,
  created_at TEXT,
  updated_at TEXT,
  raw TEXT NOT NULL
);
CREATE INDEX score_details_role ON score_details (role_result_id);
CREATE TABLE eval_results (
  parent_type TEXT NOT NULL CHECK (parent_type IN ('session_result', 'score_detail')),
  parent_id TEXT NOT NULL,
  evaluation_id TEXT,
  skill_key TEXT,
  skill_label TEXT,
  score REAL,
  score_text TEXT,
  rationale TEXT,
  evaluated_at TEXT,
  campaign_id TEXT
);
CREATE INDEX eval_results_parent ON eval_results (parent_type, parent_id);
CREATE TABLE sync_state (
  stream TEXT PRIMARY KEY,
  campaign_id TEXT NOT NULL,
  endpoint TEXT NOT NULL CHECK (endpoint IN ('session', 'role')),
  report_type TEXT,
  cursor INTEGER,
  records INTEGER NOT NULL DEFAULT 0,
  last_success_at TEXT,
  last_error TEXT,
  last_error_at TEXT
);
CREATE TABLE ndjson_files (
  path TEXT PRIMARY KEY,
  committed_bytes INTEGER NOT NULL
);
`;

/** Version 2: settings of the database itself, such as where its checkpoints' records went. */
const V2 = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;

/**
 * Version 3: what each NDJSON destination was sent of the campaign list, tracked per file. Before, the
 * shared `campaigns` table stood in for it, so a campaign stored by `campaign-sync campaigns` (or by a
 * SQLite pull) never reached campaigns.ndjson. A v2 database's campaigns file was written from that
 * table, so the table's rows are what it holds: they seed the new one.
 */
const V3 = `
CREATE TABLE ndjson_campaigns (
  path TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  raw TEXT NOT NULL,
  PRIMARY KEY (path, campaign_id)
);
INSERT INTO ndjson_campaigns (path, campaign_id, raw)
  SELECT f.path, c.id, c.raw FROM ndjson_files f, campaigns c WHERE f.path LIKE '%/campaigns.ndjson' AND f.committed_bytes > 0;
`;

/**
 * Version 4: what each NDJSON file holds of each record (a digest of its last line), so a record read
 * again (lookback, --full, reconcile) is appended only when it changed, and reconcile knows which
 * records a folder holds. Files written before have no entries yet: `indexed = 0` makes the NDJSON
 * sink build them from the file's committed lines once (store/ndjson-index.ts).
 */
const V4 = `
CREATE TABLE ndjson_records (
  path TEXT NOT NULL,
  report_type TEXT NOT NULL,
  id TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  digest TEXT NOT NULL,
  PRIMARY KEY (path, report_type, id)
) WITHOUT ROWID;
ALTER TABLE ndjson_files ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;
UPDATE ndjson_files SET indexed = 0;
`;

/**
 * Version 7: record ids served by two campaigns (store/conflicts.ts): each copy skipped, once, so its
 * warning is given once and `status` counts them per stream.
 */
const V7 = `
CREATE TABLE id_conflicts (
  stream TEXT NOT NULL,
  record_id TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  kept_campaign_id TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  PRIMARY KEY (stream, record_id)
) WITHOUT ROWID;
`;

/** MIGRATIONS[i] takes a database from version i to i + 1: SQL, then a step of code where data moves. */
const MIGRATIONS: Array<{ sql: string; run?: (db: Database.Database) => number }> = [
  { sql: V1 },
  { sql: V2 },
  { sql: V3 },
  { sql: V4 },
  { sql: V5_LINKS + V5_VIEWS + V5_INDEXES },
  { sql: V6_SQL, run: compactStored },
  { sql: V7 },
  { sql: V8_SQL },
];
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
    const step = MIGRATIONS[v] as (typeof MIGRATIONS)[number];
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
