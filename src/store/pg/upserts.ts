/**
 * Upserts into the PostgreSQL mirror, with the semantics of store/sqlite/upserts.ts (SQLite): a record read
 * again replaces the stored one and its child rows only when its content changed; a DETAILED record's
 * score details replace the ones stored. Each call runs on the caller's connection, inside its
 * transaction (sink.ts), in a handful of statements per page; the first also moves the checkpoint, so
 * a page of one statement (OVERALL) writes nothing after its checkpoint's compare-and-set.
 */
import type pg from 'pg';
import type { CheckedRecord, CheckpointMove, Endpoint, StreamId } from '../../core/types.js';
import { type SplitRecord, splitDetailed } from '../model/compact.js';
import type { UpsertCounts } from '../model/page.js';
import { evalRows, roleRow, sessionRow, type Values } from '../model/rows.js';
import { CURRENT_CHANGE, SEEN_LATER, tombstoneSql } from './changes.js';
import { pgRebuildableEval, roleRawPg } from './compact.js';
import {
  checkpointParams,
  detailsWithEvals,
  heldElsewhere,
  jsonText,
  rowParamCount,
  rowParams,
  sessionPage,
  withCheckpoint,
  withTicket,
} from './statements.js';

/** The stream whose checkpoint a page moves, in the same statement as the page's first upsert. */
export interface PageCheckpoint {
  stream: string;
  move: CheckpointMove | undefined;
  /** A one-statement page's number in its stream (statements.ts withTicket); 1 when none is given. */
  ticket?: number;
  /** The page's request id, kept with the versions it brings. */
  requestId?: string | undefined;
  /**
   * The stream's lease (stream, worker, token: leases.ts fenceParams), checked in the page's first
   * statement. A one-statement page without one is refused; any other page is then not fenced (tests).
   */
  fence?: [string, string, string];
}

const SQL = {
  session: sessionPage(rowParamCount('session_results')),
  role: withCheckpoint('role_results', rowParamCount('role_results')),
  roleCounts: withTicket('role_results', rowParamCount('role_results')),
  // A detail id another result holds stays with it (the SQLite mirror's rule), with its eval results.
  details: detailsWithEvals(),
  deleteEvals: "DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])",
  deleteDetailEvals:
    "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id IN (SELECT id FROM score_details WHERE role_result_id = ANY($1::text[]))",
  deleteDetails: 'DELETE FROM score_details WHERE role_result_id = ANY($1::text[])',
  deleteSession: 'DELETE FROM session_results WHERE id = ANY($1::text[])',
  deleteRole: 'DELETE FROM role_results WHERE id = ANY($1::text[])',
  // Such a record changed (its details): stamped with the page's number, taken by the page's first statement.
  changedFull: `UPDATE role_results r SET change_seq = ${CURRENT_CHANGE} FROM unnest($1::text[], $2::text[]) AS x(id, raw) WHERE r.id = x.id AND ${roleRawPg('r')} IS DISTINCT FROM x.raw::jsonb RETURNING r.id`,
  tombSession: tombstoneSql('session_results'),
  tombRole: tombstoneSql('role_results'),
  setRaw: 'UPDATE role_results r SET raw = x.raw::jsonb FROM unnest($1::text[], $2::text[]) AS x(id, raw) WHERE r.id = x.id',
};

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

/**
 * A page made ready to write: its rows and the parameters of its first statement, built from the
 * records alone (no connection, nothing read), so the sink can build page N+1 while page N commits.
 */
export interface PagePlan {
  endpoint: Endpoint;
  campaignId: string;
  /** The page's records, the last of each id. */
  records: CheckedRecord[];
  /** The first statement's row parameters (rowParams). */
  rows: unknown[];
  /** Session results: each record's eval result rows. */
  evals?: Map<string, Values[]>;
  /** DETAILED role results: each record's split (store/model/compact.ts). */
  splits?: Map<string, SplitRecord>;
  /**
   * Role results without score details (OVERALL), and nothing else in the page's transaction: one
   * statement with the checkpoint (withTicket), which may be written while the stream's page before commits.
   */
  single: boolean;
  /**
   * The page is one statement (session results; `single` role results), and nothing else is in its
   * transaction: it needs no BEGIN and COMMIT around it.
   */
  alone: boolean;
}

/** Plans a page (of at least one record) of a stream of `endpoint`. */
export function planPage(endpoint: Endpoint, page: CheckedRecord[], campaignId: string, reportType: string): PagePlan {
  const records = lastOfEach(page);
  if (endpoint === 'session') {
    const evals = new Map(records.map((r) => [r.id, evalRows('session_result', r.id, r.record.eval_results, campaignId)]));
    const rows = rowParams(
      'session_results',
      records.map((r) => sessionRow(r, campaignId)),
    );
    return { endpoint, campaignId, records, rows, evals, single: false, alone: true };
  }
  // The page's details go in one statement: an id an earlier record of the page claimed stays in raw.
  const split = { rebuildable: pgRebuildableEval, taken: new Set<string>() };
  // An OVERALL record carries no score details: the ones a DETAILED read stored stay.
  const splits = new Map<string, SplitRecord>();
  for (const r of records) if (Array.isArray(r.record.score_details)) splits.set(r.id, splitDetailed(r, campaignId, split));
  const rows = rowParams(
    'role_results',
    records.map((r) => roleRow(r, campaignId, reportType, splits.get(r.id)?.raw)),
  );
  return { endpoint, campaignId, records, rows, splits, single: splits.size === 0, alone: splits.size === 0 };
}

/** Writes a planned page and moves the checkpoint, on the caller's connection, in its transaction (sink.ts commitOnce). */
export function writePage(client: pg.ClientBase, plan: PagePlan, cp: PageCheckpoint): Promise<UpsertCounts> {
  return plan.endpoint === 'session' ? writeSessions(client, plan, cp) : writeRoles(client, plan, cp);
}

/** The parameters of a page's first statement: its rows, then its checkpoint's. */
function pageParams(plan: PagePlan, cp: PageCheckpoint): unknown[] {
  return [...plan.rows, ...checkpointParams(cp.stream, cp.move)];
}

/**
 * Runs the page's first statement (its upsert, with the checkpoint move and the lease's fence, and
 * `more` parameters after theirs); returns the rows written (new or changed).
 */
async function upsert(client: pg.ClientBase, sql: string, plan: PagePlan, cp: PageCheckpoint, more: unknown[] = []) {
  const params = [...pageParams(plan, cp), cp.requestId ?? null, ...(cp.fence ?? [null, null, null]), ...more];
  const written = await prepared<{ id: string | null; inserted: boolean }>(client, sql, params);
  // The last row (id NULL) says the checkpoint moved.
  return written.rows.filter((w): w is { id: string; inserted: boolean } => w.id !== null);
}

/**
 * Upserts session results and their eval results, and moves the checkpoint: one statement
 * (statements.ts sessionPage), given every record's eval results, which keeps those of the results it wrote.
 */
async function writeSessions(client: pg.ClientBase, plan: PagePlan, cp: PageCheckpoint): Promise<UpsertCounts> {
  const evals: Values[] = [];
  for (const r of plan.records) evals.push(...(plan.evals?.get(r.id) ?? []));
  const written = await upsert(client, SQL.session, plan, cp, rowParams('eval_results', evals));
  const counts = count(written);
  await conflicts(client, 'session_results', plan, new Set(written.map((w) => w.id)), counts);
  return counts;
}

/** upsertRoles for a page not planned before (tests). */
export function upsertRoles(client: pg.ClientBase, page: CheckedRecord[], campaignId: string, reportType: string, cp: PageCheckpoint) {
  return writePage(client, planPage('role', page, campaignId, reportType), cp);
}

/**
 * Upserts role results, and for DETAILED records their score details and eval results, stored once
 * (store/model/compact.ts), and moves the checkpoint. As in the SQLite mirror: a record read again
 * whose stripped `raw` is the same is compared whole (its `raw` rebuilt) and rewritten only when it
 * differs; a detail id another result already holds stays with it, and this record then keeps its
 * whole `raw`.
 */
async function writeRoles(client: pg.ClientBase, plan: PagePlan, cp: PageCheckpoint): Promise<UpsertCounts> {
  if (plan.single) {
    // No score details: nothing else to write, so only the counts come back.
    const fence = cp.fence ?? [null, null, null];
    const params = [
      ...pageParams(plan, cp),
      cp.ticket ?? 1,
      plan.records.map((r) => r.id),
      plan.campaignId,
      cp.requestId ?? null,
      ...fence,
    ];
    const row = (await prepared<{ inserted: number; written: number; conflicts: Array<[string, string]> }>(client, SQL.roleCounts, params))
      .rows[0];
    const counts: UpsertCounts = { inserted: row?.inserted ?? 0, updated: (row?.written ?? 0) - (row?.inserted ?? 0) };
    if (row !== undefined && row.conflicts.length > 0) counts.conflicts = row.conflicts.map(([id, kept]) => ({ id, kept }));
    return counts;
  }
  const { records } = plan;
  const splits = plan.splits ?? new Map<string, SplitRecord>();
  const written = await upsert(client, SQL.role, plan, cp);
  const inserted = new Map(written.map((w) => [w.id, w.inserted]));
  const counts = count(written);
  const held = await conflicts(client, 'role_results', plan, inserted, counts);
  // Read again with the same stripped raw: its details may still differ (another campaign's record is left alone).
  const again = records.filter((r) => !inserted.has(r.id) && !held.has(r.id) && splits.get(r.id)?.stripped === true);
  if (again.length > 0) {
    const changed = await client.query<{ id: string }>(SQL.changedFull, [again.map((r) => r.id), again.map((r) => jsonText(r.raw))]);
    for (const { id } of changed.rows) inserted.set(id, false);
    counts.updated += changed.rows.length;
    // The page's first statement recorded its request id only if it wrote a row itself.
    if (changed.rows.length > 0 && written.length === 0) await client.query(SEEN_LATER, [cp.requestId ?? null]);
  }
  const detailed = records.filter((r) => inserted.has(r.id) && splits.has(r.id));
  if (detailed.length === 0) return counts;
  const replaced = detailed.filter((r) => inserted.get(r.id) === false).map((r) => r.id);
  if (replaced.length > 0) {
    await client.query(SQL.deleteDetailEvals, [replaced]);
    await client.query(SQL.deleteDetails, [replaced]);
  }
  const details = detailed.flatMap((r) => (splits.get(r.id) as SplitRecord).details);
  if (details.length === 0) return counts;
  const evals = details.flatMap((d) => d.evals);
  const stored = await prepared<{ id: string }>(client, SQL.details, [
    ...rowParams(
      'score_details',
      details.map((d) => d.values),
    ),
    ...rowParams('eval_results', evals),
  ]);
  const kept = new Set(stored.rows.map((row) => row.id));
  // A detail id held by another result cannot be rebuilt from this one's rows: keep its whole text.
  if (kept.size < details.length) {
    const lost = detailed.filter((r) => {
      const split = splits.get(r.id) as SplitRecord;
      return split.stripped && split.details.some((d) => !kept.has(d.id));
    });
    if (lost.length > 0) await client.query(SQL.setRaw, [lost.map((r) => r.id), lost.map((r) => jsonText(r.raw))]);
  }
  return counts;
}

/**
 * Deletes results with their score details and eval results, leaving a tombstone of each for
 * `export --since-last` (changes.ts), deleted `at`; returns how many results went. Call inside a transaction.
 */
export async function removeResults(client: pg.ClientBase, endpoint: Endpoint, ids: string[], at: string): Promise<number> {
  if (ids.length === 0) return 0;
  // First: the change number is taken before this transaction holds any row.
  await client.query(endpoint === 'session' ? SQL.tombSession : SQL.tombRole, [ids, at]);
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

/**
 * The page's records the upsert did not write that another campaign holds (store/sqlite/conflicts.ts), put
 * in `counts.conflicts`; returns their ids. Asked only when some record was not written.
 */
async function conflicts(
  client: pg.ClientBase,
  table: 'session_results' | 'role_results',
  plan: PagePlan,
  written: { has(id: string): boolean },
  counts: UpsertCounts,
): Promise<Set<string>> {
  const unwritten = plan.records.filter((r) => !written.has(r.id)).map((r) => r.id);
  if (unwritten.length === 0) return new Set();
  const r = await client.query<{ held: Array<[string, string]> }>(`SELECT (${heldElsewhere(table, '$1', '$2')}) AS held`, [
    unwritten,
    plan.campaignId,
  ]);
  const held = r.rows[0]?.held ?? [];
  if (held.length > 0) counts.conflicts = held.map(([id, kept]) => ({ id, kept }));
  return new Set(held.map(([id]) => id));
}

function count(written: Array<{ inserted: boolean }>): UpsertCounts {
  let inserted = 0;
  for (const w of written) if (w.inserted) inserted++;
  return { inserted, updated: written.length - inserted };
}
