/**
 * The versions of results in a SQLite mirror (schema 9, store/sqlite/migrations/v9.ts), read-only: a
 * person's or a record's history, and the results as the mirror held them at a time (`export
 * --as-of`). Times are ISO 8601 text in UTC with milliseconds, so they compare as text.
 */
import { UsageError } from '../../errors.js';
import { namesUser, versionColumns, versionRows, withSummary } from '../model/versions.js';
import type { HistoryQuery, HistoryVersion, MirrorTarget, ResultVersion, VersionReader } from '../port.js';
import { Campaigns } from './campaigns.js';
import { openDatabase } from './db.js';
import { ndjsonFolder } from './ndjson-folder.js';
import { schemaVersion } from './schema.js';

/** The schema that brought result_versions. */
const VERSIONS_SINCE = 9;

const COLUMNS =
  'kind, id, version, campaign_id, report_type, user_id, user_email, order_index, deleted, valid_from, valid_to, request_id, raw';

/** Who each stored version names at its top (the raw is not read: a DETAILED one costs its rebuild). */
const PEOPLE = `SELECT * FROM (SELECT 'session' AS kind, id, user_id, user_email FROM session_results
  UNION SELECT 'role', id, user_id, user_email FROM role_results UNION SELECT kind, id, user_id, user_email FROM past_versions)`;

type Row = Omit<ResultVersion, 'deleted' | 'version'> & { deleted: bigint | number; version: bigint | number };

function version(row: Row): ResultVersion {
  return { ...row, version: Number(row.version), deleted: Number(row.deleted) === 1 };
}

export async function openSqliteVersions(t: MirrorTarget): Promise<VersionReader> {
  const db = openDatabase(t.path, { mustExist: true, readonly: true });
  const schema = schemaVersion(db);
  if (schema < VERSIONS_SINCE) {
    db.close();
    throw new UsageError(`${t.path} keeps no versions yet (schema ${schema}); run \`campaign-sync pull\` once to upgrade it`);
  }
  const byRecord = db.prepare(`SELECT ${COLUMNS} FROM result_versions WHERE kind = ? AND id = ? ORDER BY version`).safeIntegers(true);
  async function* asOf(kind: 'session' | 'role', at: string, campaign?: string): AsyncGenerator<ResultVersion> {
    const where = `kind = ? AND deleted = 0 AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)${campaign === undefined ? '' : ' AND campaign_id = ?'}`;
    const params = campaign === undefined ? [kind, at, at] : [kind, at, at, campaign];
    const stmt = db.prepare(`SELECT ${COLUMNS} FROM result_versions WHERE ${where} ORDER BY id`).safeIntegers(true);
    for (const row of stmt.iterate(...params) as Iterable<Row>) yield version(row);
  }
  return {
    async history(q: HistoryQuery): Promise<HistoryVersion[]> {
      const keys = new Map<string, { kind: string; id: string }>();
      const people = q.record !== undefined ? db.prepare(`${PEOPLE} WHERE id = ?`).iterate(q.record) : db.prepare(PEOPLE).iterate();
      for (const r of people as Iterable<{ kind: string; id: string; user_id: string | null; user_email: string | null }>) {
        if (q.user !== undefined && !namesUser(q.user, r.user_id, r.user_email)) continue;
        keys.set(`${r.kind}\u0000${r.id}`, { kind: r.kind, id: r.id });
      }
      const out: HistoryVersion[] = [];
      for (const { kind, id } of keys.values()) for (const row of byRecord.all(kind, id) as Row[]) out.push(withSummary(version(row)));
      return out;
    },
    asOf: (kind, at, campaign) => ({ columns: versionColumns(kind), rows: versionRows(asOf(kind, at, campaign)) }),
    campaignIds: async (selector) => new Campaigns(db).idsFor(selector),
    // Every version's valid_from is the time of a recorded change (timeOf in migrations/v9.ts): none is earlier.
    start: async () => (db.prepare('SELECT min(at) FROM change_times').pluck().get() as string | null) ?? null,
    recordsElsewhere: async (kind) => ndjsonFolder(db, kind === 'session' ? 'session_results' : 'role_results'),
    close: async () => {
      db.close();
    },
  };
}
