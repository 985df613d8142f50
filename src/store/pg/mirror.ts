/**
 * Upserts into the PostgreSQL mirror, with the semantics of store/mirror.ts (SQLite): a record read
 * again replaces the stored one and its child rows only when its content changed; a DETAILED record's
 * score details replace the ones stored. Each call runs on the caller's connection, inside its
 * transaction (sink.ts), in a handful of statements per page.
 */
import type pg from 'pg';
import { toJson } from '../../core/json.js';
import type { CheckedRecord, Endpoint, StreamId } from '../../core/types.js';
import type { UpsertCounts } from '../mirror.js';
import { detailValues, evalRows, roleRow, sessionRow, text, type Values } from '../rows.js';
import { insertAll, toColumns, upsertChanged } from './statements.js';

const SQL = {
  session: upsertChanged('session_results'),
  role: upsertChanged('role_results'),
  detail: upsertChanged('score_details', false),
  evals: insertAll('eval_results'),
  deleteEvals: "DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])",
  deleteDetailEvals:
    "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id IN (SELECT id FROM score_details WHERE role_result_id = ANY($1::text[]))",
  deleteDetails: 'DELETE FROM score_details WHERE role_result_id = ANY($1::text[])',
  deleteSession: 'DELETE FROM session_results WHERE id = ANY($1::text[])',
  deleteRole: 'DELETE FROM role_results WHERE id = ANY($1::text[])',
};

/**
 * A DETAILED record's score details with their position in it (entries without an id, or repeating
 * one, are skipped as the SQLite mirror skips them). PostgreSQL keeps every raw whole: jsonb already
 * stores it compactly, so the SQLite mirror's compaction (store/compact.ts) is not needed here.
 */
function detailRows(r: CheckedRecord, campaignId: string): Array<{ id: string; values: Values; evals: unknown }> {
  const entries = r.record.score_details as unknown[];
  const seen = new Set<string>();
  const out: Array<{ id: string; values: Values; evals: unknown }> = [];
  entries.forEach((d, i) => {
    if (d === null || typeof d !== 'object' || Array.isArray(d)) return;
    const detail = d as Record<string, unknown>;
    const id = text(detail.id);
    if (id === null || seen.has(id)) return;
    seen.add(id);
    out.push({ id, values: detailValues(r.id, campaignId, detail, toJson(detail), i), evals: detail.eval_results });
  });
  return out;
}

/** Runs a statement prepared once per connection (named): a page's statements skip parsing and planning. */
export function prepared<R extends pg.QueryResultRow = pg.QueryResultRow>(client: pg.ClientBase, sql: string, values: unknown[]) {
  let name = NAMES.get(sql);
  if (name === undefined) {
    name = `campaign_sync_${NAMES.size}`;
    NAMES.set(sql, name);
  }
  return client.query<R>({ name, text: sql, values });
}
const NAMES = new Map<string, string>();

/** The last record of each id (a page that repeats an id keeps its last copy, as the SQLite mirror ends up doing). */
function lastOfEach(records: CheckedRecord[]): CheckedRecord[] {
  const byId = new Map<string, CheckedRecord>();
  for (const r of records) byId.set(r.id, r);
  return byId.size === records.length ? records : [...byId.values()];
}

async function upsert(client: pg.ClientBase, sql: string, table: 'session_results' | 'role_results', rows: Values[]) {
  const written = await prepared<{ id: string; inserted: boolean }>(client, sql, toColumns(table, rows));
  return written.rows;
}

/** Upserts session results and their eval results. */
export async function upsertSessions(client: pg.ClientBase, page: CheckedRecord[], campaignId: string): Promise<UpsertCounts> {
  const records = lastOfEach(page);
  if (records.length === 0) return { inserted: 0, updated: 0 };
  const written = await upsert(
    client,
    SQL.session,
    'session_results',
    records.map((r) => sessionRow(r, campaignId)),
  );
  const counts = count(written);
  if (written.length === 0) return counts;
  const updated = written.filter((w) => !w.inserted).map((w) => w.id);
  if (updated.length > 0) await client.query(SQL.deleteEvals, [updated]);
  const changed = new Set(written.map((w) => w.id));
  const evals: Values[] = [];
  for (const r of records) if (changed.has(r.id)) evals.push(...evalRows('session_result', r.id, r.record.eval_results, campaignId));
  if (evals.length > 0) await prepared(client, SQL.evals, toColumns('eval_results', evals));
  return counts;
}

/** Upserts role results, and for DETAILED records their score details and eval results. */
export async function upsertRoles(
  client: pg.ClientBase,
  page: CheckedRecord[],
  campaignId: string,
  reportType: string,
): Promise<UpsertCounts> {
  const records = lastOfEach(page);
  if (records.length === 0) return { inserted: 0, updated: 0 };
  const written = await upsert(
    client,
    SQL.role,
    'role_results',
    records.map((r) => roleRow(r, campaignId, reportType)),
  );
  const counts = count(written);
  if (written.length === 0) return counts;
  const inserted = new Map(written.map((w) => [w.id, w.inserted]));
  // An OVERALL record carries no score details: the ones a DETAILED read stored stay.
  const detailed = records.filter((r) => inserted.has(r.id) && Array.isArray(r.record.score_details));
  const replaced = detailed.filter((r) => inserted.get(r.id) === false).map((r) => r.id);
  if (replaced.length > 0) {
    await client.query(SQL.deleteDetailEvals, [replaced]);
    await client.query(SQL.deleteDetails, [replaced]);
  }
  const details = new Map<string, { values: Values; evals: unknown }>();
  for (const r of detailed) for (const d of detailRows(r, campaignId)) details.set(d.id, d);
  if (details.size > 0) {
    await prepared(
      client,
      SQL.detail,
      toColumns(
        'score_details',
        [...details.values()].map((d) => d.values),
      ),
    );
    const evals: Values[] = [];
    for (const [id, d] of details) evals.push(...evalRows('score_detail', id, d.evals, campaignId));
    if (evals.length > 0) await prepared(client, SQL.evals, toColumns('eval_results', evals));
  }
  return counts;
}

/** Deletes results with their score details and eval results; returns how many results went. */
export async function removeResults(client: pg.ClientBase, endpoint: Endpoint, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  if (endpoint === 'session') {
    await client.query(SQL.deleteEvals, [ids]);
    return (await client.query(SQL.deleteSession, [ids])).rowCount ?? 0;
  }
  await client.query(SQL.deleteDetailEvals, [ids]);
  await client.query(SQL.deleteDetails, [ids]);
  return (await client.query(SQL.deleteRole, [ids])).rowCount ?? 0;
}

/** The ids of the records stored for a stream. */
export async function storedIds(client: pg.ClientBase | pg.Pool, id: StreamId): Promise<string[]> {
  const r =
    id.endpoint === 'session'
      ? await client.query<{ id: string }>('SELECT id FROM session_results WHERE campaign_id = $1', [id.campaignId])
      : await client.query<{ id: string }>('SELECT id FROM role_results WHERE campaign_id = $1 AND report_type IS NOT DISTINCT FROM $2', [
          id.campaignId,
          id.reportType,
        ]);
  return r.rows.map((row) => row.id);
}

function count(written: Array<{ inserted: boolean }>): UpsertCounts {
  let inserted = 0;
  for (const w of written) if (w.inserted) inserted++;
  return { inserted, updated: written.length - inserted };
}
