/**
 * An erasure in the PostgreSQL mirror, by the plan every store shares (store/model/erasure-plan.ts):
 * `forget --older-than` (a retention): the results dated before a cut, with their score details, eval
 * results and copies (store/model/erase-tables.ts); `forget --user`: one candidate's results, score
 * details, eval results and past versions deleted, their score details inside other candidates'
 * records taken out, their quarantined records deleted and their e-mail and ids scrubbed from the
 * streams' errors, in one transaction, and their streams' counts lowered. This file reads the rows
 * and writes the plan's answers, as store/sqlite/erase-rows.ts does in SQLite. PostgreSQL keeps the
 * old row versions in the table's files: the transaction marks each table it changed, and the caller
 * rewrites them after the commit, under the same leases (rewrite.ts).
 */
import type pg from 'pg';
import type { ErasedCounts, StoredError } from '../../core/email.js';
import { parseJson } from '../../core/json.js';
import { ERASED_EXAMPLE } from '../model/drift.js';
import { COPY_TABLES, type CopyTable } from '../model/erase-tables.js';
import {
  ErasurePlan,
  type RowFate,
  type StoredDetail,
  type StoredRole,
  type StoredSession,
  type StoredVersion,
} from '../model/erasure-plan.js';
import { PersonGraph } from '../model/person.js';
import type { Values } from '../model/rows.js';
import { handOnPg } from './changes.js';
import type { PgDatabase } from './database.js';
import { markRewrite, type RewrittenTable } from './rewrite.js';
import { MIRROR_SCHEMA } from './schema.js';
import { jsonText, rewriteRows, rowParams } from './statements.js';

const TABLES = ['session_results', 'role_results', 'score_details'] as const;
type Table = (typeof TABLES)[number];

/** Rows read per query: a mirror is read in pages by id, never whole into memory. */
const PAGE = 2000;

interface Rows {
  session_results: StoredSession;
  role_results: StoredRole;
  score_details: StoredDetail;
}

/** The columns read of each table beside its text: what the plan judges, and what a rewritten row is made of. */
const READ: Record<Table, string> = {
  session_results: 'id, campaign_id, user_id, user_email, order_index::text AS order_index',
  role_results: 'id, campaign_id, user_id, user_email, order_index::text AS order_index, report_type',
  score_details: 'id, role_result_id, campaign_id, user_id, user_email, position',
};

function parsed(raw: string | null): unknown {
  if (raw === null) return undefined;
  try {
    return parseJson(raw);
  } catch {
    return undefined;
  }
}

/** Each row of `table` (its text, parsed), a page at a time. */
async function eachRow<T extends Table>(c: pg.PoolClient, table: T, fn: (row: Rows[T], record: unknown) => void): Promise<void> {
  let after = '';
  for (;;) {
    const page = await c.query<Rows[T] & { raw: string }>(
      `SELECT ${READ[table]}, raw::text AS raw FROM ${table} WHERE id > $1 ORDER BY id LIMIT ${PAGE}`,
      [after],
    );
    for (const row of page.rows) fn(row, parsed(row.raw));
    if (page.rows.length < PAGE) return;
    after = (page.rows[page.rows.length - 1] as { id: string }).id;
  }
}

type VersionRow = StoredVersion & { version: number; raw: string | null };

/** Each past version (schema 7; none before), its text parsed, a page at a time. */
async function eachVersion(c: pg.PoolClient, fn: (row: VersionRow, record: unknown) => void): Promise<void> {
  const present = await c.query<{ t: string | null }>("SELECT to_regclass('past_versions')::text AS t");
  if (present.rows[0]?.t === null || present.rows[0]?.t === undefined) return;
  let after: [string, string, number] = ['', '', 0];
  for (;;) {
    const page = await c.query<VersionRow>(
      `SELECT kind, id, version, user_id, user_email, raw::text AS raw FROM past_versions WHERE (kind, id, version) > ($1, $2, $3)
       ORDER BY kind, id, version LIMIT ${PAGE}`,
      after,
    );
    for (const row of page.rows) fn(row, parsed(row.raw));
    if (page.rows.length < PAGE) return;
    const last = page.rows[page.rows.length - 1] as VersionRow;
    after = [last.kind, last.id, last.version];
  }
}

/** The person's past versions, as the plan takes them; with `count`, only counted. */
async function eraseVersions(c: pg.PoolClient, plan: ErasurePlan, count: boolean): Promise<{ removed: number; changed: number }> {
  const versions = plan.versions<VersionRow>();
  await eachVersion(c, (row, record) => versions.add(row, record));
  const { records, rewrite } = versions.done();
  const keys = [records.map((k) => k.kind), records.map((k) => k.id)];
  const removed =
    records.length === 0
      ? 0
      : count
        ? Number(
            (
              await c.query<{ n: string }>(
                'SELECT count(*) AS n FROM past_versions v JOIN unnest($1::text[], $2::text[]) AS k(kind, id) ON v.kind = k.kind AND v.id = k.id',
                keys,
              )
            ).rows[0]?.n ?? 0,
          )
        : ((
            await c.query(
              'DELETE FROM past_versions v USING unnest($1::text[], $2::text[]) AS k(kind, id) WHERE v.kind = k.kind AND v.id = k.id',
              keys,
            )
          ).rowCount ?? 0);
  if (count) return { removed, changed: rewrite.length };
  let changed = 0;
  for (const { row, text } of rewrite) {
    changed +=
      (
        await c.query('UPDATE past_versions SET raw = $4::jsonb WHERE kind = $1 AND id = $2 AND version = $3', [
          row.kind,
          row.id,
          row.version,
          jsonText(text),
        ])
      ).rowCount ?? 0;
  }
  return { removed, changed };
}

/** What a PostgreSQL erasure removed: the rows (core/email.ts), and the rows of each table of copies that had any. */
export interface PgErased {
  rows: ErasedCounts;
  copies: Record<string, number>;
}

/**
 * Erases the candidate `user` (an id or an e-mail) names, or the results dated before `before` (ms
 * since the epoch). `count`: the same walk, the same plan, the same answers, but each write is
 * replaced by a read that counts the rows it would touch (`forget --dry-run`, forget's question), in
 * a read-only transaction: one snapshot, and a write there would fail rather than erase.
 */
export async function eraseFromPg(db: PgDatabase, what: { user: string } | { before: number }, count = false): Promise<PgErased> {
  const work = async (c: pg.PoolClient): Promise<PgErased> => {
    if (count) await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    // The rows a statement removes, or with `count` the rows its twin counts.
    const affected = async (del: string, sel: string, values: unknown[]): Promise<number> =>
      count ? Number((await c.query<{ n: string }>(sel, values)).rows[0]?.n ?? 0) : ((await c.query(del, values)).rowCount ?? 0);
    let plan: ErasurePlan;
    if ('user' in what) {
      const graph = new PersonGraph();
      for (const t of TABLES) {
        await eachRow(c, t, (row, record) => {
          graph.add({ user_id: row.user_id, user_email: row.user_email });
          graph.add(record);
        });
      }
      await eachVersion(c, (row, record) => {
        graph.add({ user_id: row.user_id, user_email: row.user_email });
        graph.add(record);
      });
      plan = ErasurePlan.forPerson(what.user, graph.find(what.user));
    } else plan = ErasurePlan.olderThan(what.before);
    const gone: Record<Table, string[]> = { session_results: [], role_results: [], score_details: [] };
    const kept: Record<Table, Values[]> = { session_results: [], role_results: [], score_details: [] };
    // A retention may take most of the mirror: what goes is kept by its id, not its text.
    const apply = (t: Table, id: string, f: RowFate) => {
      if (f.do === 'delete') gone[t].push(id);
      else if (f.do === 'rewrite') kept[t].push(f.values);
    };
    await eachRow(c, 'session_results', (row, record) => apply('session_results', row.id, plan.session(row, record)));
    await eachRow(c, 'role_results', (row, record) => apply('role_results', row.id, plan.role(row, record)));
    if (plan.readsDetails) await eachRow(c, 'score_details', (row, record) => apply('score_details', row.id, plan.detail(row, record)));
    const sessionIds = gone.session_results;
    const roleIds = gone.role_results;
    let evals = await affected(
      "DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])",
      "SELECT count(*) AS n FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])",
      [sessionIds],
    );
    // The tables whose files still hold a changed row's old version: rewritten after the commit.
    const touched = new Set<RewrittenTable>();
    const touch = (t: RewrittenTable, n: number | null | undefined) => {
      if ((n ?? 0) > 0) touched.add(t);
    };
    touch('eval_results', evals);
    if (!count) await c.query('DELETE FROM session_results WHERE id = ANY($1::text[])', [sessionIds]);
    // Their score details, under their role results or under another record: theirs too.
    const details = await c.query<{ id: string }>(
      `${count ? 'SELECT id FROM' : 'DELETE FROM'} score_details WHERE role_result_id = ANY($1::text[]) OR id = ANY($2::text[])${count ? '' : ' RETURNING id'}`,
      [roleIds, gone.score_details],
    );
    const detailEvals = await affected(
      "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id = ANY($1::text[])",
      "SELECT count(*) AS n FROM eval_results WHERE parent_type = 'score_detail' AND parent_id = ANY($1::text[])",
      [details.rows.map((r) => r.id)],
    );
    evals += detailEvals;
    touch('eval_results', detailEvals);
    touch('session_results', sessionIds.length + kept.session_results.length);
    touch('role_results', roleIds.length + kept.role_results.length);
    touch('score_details', (details.rowCount ?? 0) + kept.score_details.length);
    // An earlier tombstone of an erased result is deleted and written again (changes.ts).
    touch('tombstones', sessionIds.length + roleIds.length);
    const rewritten = plan.rewrittenResults();
    if (!count) {
      await c.query('DELETE FROM role_results WHERE id = ANY($1::text[])', [roleIds]);
      // The drift examples among them: the path or value stays, the record's id goes (store/sqlite/drift-ledger.ts).
      if ((await c.query("SELECT to_regclass('drift_seen') IS NOT NULL AS t")).rows[0]?.t === true)
        touch(
          'drift_seen',
          (await c.query('UPDATE drift_seen SET record_id = $1 WHERE record_id = ANY($2::text[])', [ERASED_EXAMPLE, plan.examplesErased()]))
            .rowCount,
        );
      for (const [stream, n] of plan.removedStreams())
        await c.query('UPDATE sync_state SET records = greatest(0, records - $2) WHERE stream = $1', [stream, n]);
      for (const t of TABLES) if (kept[t].length > 0) await c.query(rewriteRows(t), rowParams(t, kept[t]));
      await handOnPg(c, plan.reason, plan.removedResults(), rewritten);
    }
    let changed = rewritten.session.length + rewritten.role.length;
    const copies: Record<string, number> = {};
    if (plan.readsVersions) {
      const versions = await eraseVersions(c, plan, count);
      if (versions.removed > 0) copies.past_versions = versions.removed;
      changed += versions.changed;
      touch('past_versions', versions.removed + versions.changed);
    }
    if (plan.readsCopies) {
      for (const t of COPY_TABLES) {
        const done = await eraseCopies(c, t, plan, count);
        if (done === undefined) continue;
        if (done.removed > 0) copies[t.table] = (copies[t.table] ?? 0) + done.removed;
        changed += done.changed;
        touch(t.table as RewrittenTable, done.removed + done.changed);
      }
    }
    // A service's error message may quote the candidate; status and /healthz show the stored text.
    let errorTexts = 0;
    if (plan.readsErrors) {
      const stored = await c.query<StoredError>('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL');
      if (count) errorTexts = plan.errorTexts(stored.rows).length;
      else
        for (const row of plan.errorTexts(stored.rows)) {
          errorTexts +=
            (await c.query('UPDATE sync_state SET last_error = $1 WHERE stream = $2', [row.last_error, row.stream])).rowCount ?? 0;
        }
      touch('sync_state', errorTexts);
    }
    // By the text as received too: a quarantined record may not parse.
    if (plan.readsQuarantine) {
      const held = await c.query<{ id: string; raw: string }>('SELECT id, raw FROM quarantine');
      const named = held.rows.filter((r) => plan.quarantined(r.raw).do === 'delete').map((r) => r.id);
      if (named.length > 0) {
        if (!count) await c.query('DELETE FROM quarantine WHERE id = ANY($1::bigint[])', [named]);
        touch('quarantine', named.length);
        copies.quarantine = (copies.quarantine ?? 0) + named.length;
      }
    }
    const rows: ErasedCounts = {
      session_results: sessionIds.length,
      role_results: roleIds.length,
      score_details: details.rowCount ?? 0,
      eval_results: evals,
      records_changed: changed,
      result_versions: copies.past_versions ?? 0,
      error_texts: errorTexts,
      quarantined: copies.quarantine ?? 0,
    };
    // A changed result's triggers write its past versions (schema 7): their old row versions hold the person too.
    if (touched.has('session_results') || touched.has('role_results')) touched.add('past_versions');
    if (!count) await markRewrite(c, touched);
    return { rows, copies };
  };
  return db.transaction(work, count ? 'cannot read' : 'cannot write to');
}

/**
 * Erases what the plan takes from one table of copies (store/model/erase-tables.ts), a page at a
 * time by the row's physical address (stable within the transaction: every stream's lease keeps
 * writers out). Undefined when the schema has no such table.
 */
async function eraseCopies(
  c: pg.PoolClient,
  t: CopyTable,
  plan: ErasurePlan,
  count: boolean,
): Promise<{ removed: number; changed: number } | undefined> {
  const cols = await c.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = ${MIRROR_SCHEMA} AND table_name = $1`,
    [t.table],
  );
  const have = new Set(cols.rows.map((r) => r.column_name));
  if (![t.raw, t.recordId, t.stored].every((col) => have.has(col))) return undefined;
  const whole: string[] = [];
  const part: Array<{ at: string; text: string }> = [];
  let after = '(0,0)';
  for (;;) {
    const page = await c.query<{ at: string; raw: string | null; record_id: string | null; stored: string | null }>(
      `SELECT ctid::text AS at, ${t.raw}::text AS raw, ${t.recordId}::text AS record_id, to_json(${t.stored}) #>> '{}' AS stored
       FROM ${t.table} WHERE ctid > $1::tid ORDER BY ctid LIMIT ${PAGE}`,
      [after],
    );
    for (const row of page.rows) {
      const f = plan.copy(row, parsed(row.raw));
      if (f.do === 'delete') whole.push(row.at);
      else if (f.do === 'rewrite') part.push({ at: row.at, text: f.text });
    }
    if (page.rows.length < PAGE) break;
    after = (page.rows[page.rows.length - 1] as { at: string }).at;
  }
  // Counting: each row was read just now in this snapshot, there to remove or rewrite.
  if (count) return { removed: whole.length, changed: part.length };
  const removed = whole.length === 0 ? 0 : ((await c.query(`DELETE FROM ${t.table} WHERE ctid = ANY($1::tid[])`, [whole])).rowCount ?? 0);
  let changed = 0;
  for (const p of part)
    changed += (await c.query(`UPDATE ${t.table} SET ${t.raw} = $1 WHERE ctid = $2::tid`, [p.text, p.at])).rowCount ?? 0;
  return { removed, changed };
}

/** Every stream of the mirror (forget holds all their leases, so no pull writes the user back meanwhile). */
export async function allStreams(db: PgDatabase): Promise<string[]> {
  return (await db.query<{ stream: string }>('SELECT stream FROM sync_state')).rows.map((r) => r.stream);
}
