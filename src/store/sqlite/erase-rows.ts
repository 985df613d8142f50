/**
 * Erasing from the SQLite mirror's tables what an erasure's plan takes (store/model/erasure-plan.ts):
 * one candidate's (`forget --user`), as a data controller must on an erasure request: every row of
 * theirs (score details and eval results included), their score details inside other candidates'
 * records, their past versions, their quarantined records, and their e-mail and ids in the streams'
 * error texts; or the results dated before a cut (`forget --older-than`, a retention), with their
 * score details, eval results and copies (store/model/erase-tables.ts). This file reads the rows and
 * writes the plan's answers; the plan decides, for PostgreSQL too (store/pg/erase-rows.ts).
 *
 * The database deletes with `secure_delete` on, is rebuilt by VACUUM and its WAL truncated, so the
 * deleted bytes are overwritten rather than left in free space, free pages or the log. The NDJSON
 * files are ndjson/erase-lines.ts's; the order of the whole erasure and its finishing after a crash,
 * erasure.ts's.
 */
import type { ErasedCounts, StoredError } from '../../core/email.js';
import { parseJson } from '../../core/json.js';
import { errorCode } from '../../errors.js';
import type { EraseRule } from '../model/erase-rule.js';
import { COPY_TABLES, type CopyTable } from '../model/erase-tables.js';
import {
  ErasurePlan,
  type RowFate,
  type StoredDetail,
  type StoredRole,
  type StoredSession,
  type StoredVersion,
} from '../model/erasure-plan.js';
import type { PersonGraph } from '../model/person.js';
import type { Values } from '../model/rows.js';
import { CURRENT_SEQ, consumedTables, ERASED_TOMBSTONE_SQL, NEXT_SEQ_SQL } from './changes.js';
import type { Db } from './db.js';
import { forgetDriftExamples } from './drift-ledger.js';
import { endErasure } from './erasure-mark.js';
import { SqliteQuarantine } from './quarantine.js';
import { update } from './sql.js';

/** The rows removed and rewritten (core/email.ts), and the rows removed from each table of copies (store/model/erase-tables.ts) that had any. */
export type MirrorCounts = ErasedCounts & { copies: Record<string, number> };

const TABLES = ['session_results', 'role_results', 'score_details', 'past_versions'] as const;

function parsed(raw: string | null): unknown {
  if (raw === null) return undefined;
  try {
    return parseJson(raw);
  } catch {
    return undefined;
  }
}

/** Feeds every stored record (each table's `raw`, and its user columns) to the graph that tells who is who. */
export function gatherFromMirror(db: Db, graph: PersonGraph): void {
  for (const table of TABLES) {
    for (const row of db.prepare(`SELECT user_id, user_email, raw FROM ${table}`).iterate() as Iterable<{
      user_id: string | null;
      user_email: string | null;
      raw: string | null;
    }>) {
      graph.add({ user_id: row.user_id, user_email: row.user_email });
      if (row.raw !== null) graph.add(parsed(row.raw));
    }
  }
}

/** The ids of the rows of `sql` the plan deletes, and the values of those it rewrites. */
function scan<R extends { id: string; raw: string | null }>(db: Db, sql: string, fate: (row: R, record: unknown) => RowFate) {
  const gone: string[] = [];
  const kept: Values[] = [];
  for (const row of db.prepare(sql).safeIntegers(true).iterate() as Iterable<R>) {
    const f = fate(row, parsed(row.raw));
    // A retention may take most of the mirror: what goes is kept by its id, not its text.
    if (f.do === 'delete') gone.push(row.id);
    else if (f.do === 'rewrite') kept.push(f.values);
  }
  return { gone, kept };
}

/**
 * Erases what the plan takes from the tables (a bare rule is planned here). Call inside the
 * erasure's transaction, with secure_delete on. A record kept without the candidate's part has its
 * row rewritten from its new text, every column.
 *
 * `count`: the same walk, the same plan, the same answers, but each write is replaced by a read
 * that counts the rows it would touch, so `forget --dry-run` (and forget's question) says exactly
 * what the erasure then does under the same lock. Call inside a read transaction (one snapshot).
 */
export function eraseFromMirror(db: Db, planned: ErasurePlan | EraseRule, count = false): MirrorCounts {
  const plan = planned instanceof ErasurePlan ? planned : ErasurePlan.ofRule(planned);
  const sessions = scan<StoredSession & { raw: string }>(
    db,
    'SELECT id, campaign_id, user_id, user_email, order_index, raw FROM session_results',
    (r, v) => plan.session(r, v),
  );
  const roles = scan<StoredRole & { raw: string }>(
    db,
    'SELECT id, campaign_id, user_id, user_email, order_index, report_type, raw FROM role_results',
    (r, v) => plan.role(r, v),
  );
  const details = plan.readsDetails
    ? scan<StoredDetail & { raw: string }>(
        db,
        'SELECT id, role_result_id, campaign_id, user_id, user_email, position, raw FROM score_details',
        (r, v) => plan.detail(r, v),
      )
    : { gone: [], kept: [] };
  let evals = 0;
  let removedDetails = 0;
  // Each statement that removes rows has its count twin: the number of rows it would remove.
  const rowsOf = (del: string, sel: string) => {
    const statement = db.prepare(count ? sel : del);
    return (...args: unknown[]): number => (count ? Number(statement.pluck().get(...args)) : statement.run(...args).changes);
  };
  const deleteEvals = rowsOf(
    'DELETE FROM eval_results WHERE parent_type = ? AND parent_id = ?',
    'SELECT count(*) FROM eval_results WHERE parent_type = ? AND parent_id = ?',
  );
  const detailIds = db.prepare('SELECT id FROM score_details WHERE role_result_id = ?').pluck();
  const deleteDetailsOf = rowsOf(
    'DELETE FROM score_details WHERE role_result_id = ?',
    'SELECT count(*) FROM score_details WHERE role_result_id = ?',
  );
  const deleteDetail = rowsOf('DELETE FROM score_details WHERE id = ?', 'SELECT count(*) FROM score_details WHERE id = ?');
  const deleteSession = rowsOf('DELETE FROM session_results WHERE id = ?', 'SELECT count(*) FROM session_results WHERE id = ?');
  const deleteRole = rowsOf('DELETE FROM role_results WHERE id = ?', 'SELECT count(*) FROM role_results WHERE id = ?');
  for (const id of sessions.gone) {
    evals += deleteEvals('session_result', id);
    deleteSession(id);
  }
  for (const id of roles.gone) {
    for (const d of detailIds.all(id) as string[]) evals += deleteEvals('score_detail', d);
    removedDetails += deleteDetailsOf(id);
    deleteRole(id);
  }
  if (!count) {
    const uncount = db.prepare('UPDATE sync_state SET records = max(0, records - ?) WHERE stream = ?');
    for (const [stream, n] of plan.removedStreams()) uncount.run(n, stream);
    forgetDriftExamples(db, plan.examplesErased());
  }
  // Their score details under another's record (under their own, gone already).
  for (const id of details.gone) {
    evals += deleteEvals('score_detail', id);
    removedDetails += deleteDetail(id);
  }
  const rewrite = (table: 'session_results' | 'role_results' | 'score_details', rows: Values[]) => {
    if (count) return;
    const statement = db.prepare(update(table));
    for (const values of rows) statement.run(...values);
  };
  rewrite('session_results', sessions.kept);
  rewrite('role_results', roles.kept);
  rewrite('score_details', details.kept);
  const rewritten = plan.rewrittenResults();
  // A count hands nothing on: no deletion row, no new change number.
  if (!count) handOn(db, plan, rewritten);
  const copies: Record<string, number> = {};
  const versions = plan.readsVersions ? eraseVersions(db, plan, count) : { removed: 0, changed: 0 };
  if (versions.removed > 0) copies.past_versions = versions.removed;
  let copiesChanged = versions.changed;
  if (plan.readsCopies) {
    for (const t of COPY_TABLES) {
      const done = eraseCopies(db, t, plan, count);
      if (done === undefined) continue;
      if (done.removed > 0) copies[t.table] = (copies[t.table] ?? 0) + done.removed;
      copiesChanged += done.changed;
    }
  }
  // By the text as received too: a quarantined record may not parse.
  const quarantined = plan.readsQuarantine ? new SqliteQuarantine(db).erase(plan, count) : 0;
  if (quarantined > 0) copies.quarantine = (copies.quarantine ?? 0) + quarantined;
  return {
    session_results: sessions.gone.length,
    role_results: roles.gone.length,
    score_details: removedDetails,
    eval_results: evals,
    records_changed: rewritten.session.length + rewritten.role.length + copiesChanged,
    result_versions: copies.past_versions ?? 0,
    error_texts: plan.readsErrors ? scrubErrors(db, plan, count) : 0,
    quarantined: copies.quarantine ?? 0,
    copies,
  };
}

/**
 * What the erasure changed, handed to the consumers of `export --since-last` (store/sqlite/changes.ts):
 * one change number for the whole erasure; each result rewritten is stamped with it (given again
 * whole; its version trigger keeps the version it replaces, already without the person); each result
 * removed leaves a tombstone of its id alone, for the tables some consumer reads. The tombstones are
 * written once the rows are gone, so the tombstone trigger finds no row to make a version of.
 */
function handOn(db: Db, plan: ErasurePlan, rewritten: { session: string[]; role: string[] }): void {
  const removed = plan.removedResults();
  if (removed.session.length + removed.role.length + rewritten.session.length + rewritten.role.length === 0) return;
  db.prepare(NEXT_SEQ_SQL).run();
  for (const [table, ids] of [
    ['session_results', rewritten.session],
    ['role_results', rewritten.role],
  ] as const) {
    const stamp = db.prepare(`UPDATE ${table} SET change_seq = ${CURRENT_SEQ} WHERE id = ?`);
    for (const id of ids) stamp.run(id);
  }
  const read = consumedTables(db);
  const at = new Date().toISOString();
  const earlier = db.prepare('DELETE FROM tombstones WHERE table_name = ? AND id = ?');
  const tombstone = db.prepare(ERASED_TOMBSTONE_SQL);
  for (const [table, ids] of [
    ['session_results', removed.session],
    ['role_results', removed.role],
  ] as const) {
    for (const id of ids) {
      // An earlier tombstone of the id (a prune, the record back since) would say more than the id: this one replaces it.
      earlier.run(table, id);
      if (read.has(table)) tombstone.run(table, at, id, plan.reason);
    }
  }
}

/** Whether the database has the table and its columns (a table of copies a later schema adds). */
function hasColumns(db: Db, table: string, columns: string[]): boolean {
  const have = new Set(db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]);
  return have.size > 0 && columns.every((c) => have.has(c));
}

/**
 * Erases what the plan takes from one table of copies (store/model/erase-tables.ts), or with `count`
 * only counts it. Undefined when the database has no such table.
 */
function eraseCopies(db: Db, t: CopyTable, plan: ErasurePlan, count: boolean): { removed: number; changed: number } | undefined {
  if (!hasColumns(db, t.table, [t.raw, t.recordId, t.stored])) return undefined;
  const whole: bigint[] = [];
  const part: Array<{ rid: bigint; text: string }> = [];
  const rows = db
    .prepare(`SELECT rowid AS rid, ${t.raw} AS raw, ${t.recordId} AS record_id, ${t.stored} AS stored FROM ${t.table}`)
    .safeIntegers(true)
    .iterate() as Iterable<{ rid: bigint; raw: unknown; record_id: unknown; stored: unknown }>;
  for (const row of rows) {
    const f = plan.copy(row, row.raw === null ? undefined : parsed(String(row.raw)));
    if (f.do === 'delete') whole.push(row.rid);
    else if (f.do === 'rewrite') part.push({ rid: row.rid, text: f.text });
  }
  // Each row was read just now in this transaction: it is there to remove or rewrite.
  if (count) return { removed: whole.length, changed: part.length };
  const remove = db.prepare(`DELETE FROM ${t.table} WHERE rowid = ?`);
  const rewrite = db.prepare(`UPDATE ${t.table} SET ${t.raw} = ? WHERE rowid = ?`);
  let removed = 0;
  let changed = 0;
  for (const rid of whole) removed += remove.run(rid).changes;
  for (const p of part) changed += rewrite.run(p.text, p.rid).changes;
  return { removed, changed };
}

/** The person's past versions (schema 9), as the plan takes them; with `count`, only counted. */
function eraseVersions(db: Db, plan: ErasurePlan, count: boolean): { removed: number; changed: number } {
  const present = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'past_versions'").get();
  if (present === undefined) return { removed: 0, changed: 0 };
  const versions = plan.versions<StoredVersion & { rid: bigint }>();
  const rows = db
    .prepare('SELECT rowid AS rid, kind, id, user_id, user_email, raw FROM past_versions')
    .safeIntegers(true)
    .iterate() as Iterable<StoredVersion & { rid: bigint; raw: string | null }>;
  for (const row of rows) versions.add(row, parsed(row.raw));
  const { records, rewrite } = versions.done();
  const remove = db.prepare(
    count ? 'SELECT count(*) FROM past_versions WHERE kind = ? AND id = ?' : 'DELETE FROM past_versions WHERE kind = ? AND id = ?',
  );
  let removed = 0;
  for (const { kind, id } of records) removed += count ? Number(remove.pluck().get(kind, id)) : remove.run(kind, id).changes;
  if (count) return { removed, changed: rewrite.length };
  const update = db.prepare('UPDATE past_versions SET raw = ? WHERE rowid = ?');
  let changed = 0;
  for (const { row, text } of rewrite) changed += update.run(text, row.rid).changes;
  return { removed, changed };
}

/**
 * The streams' last errors without the candidate (core/email.ts withoutCandidate): a service's error
 * message may quote the e-mail of a record it failed on, and `status` and watch's /healthz show the
 * text. Returns how many were changed. Call inside the erasure's transaction.
 */
function scrubErrors(db: Db, plan: ErasurePlan, count: boolean): number {
  const stored = db.prepare('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL').all() as StoredError[];
  if (count) return plan.errorTexts(stored).length;
  const update = db.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?');
  let n = 0;
  for (const row of plan.errorTexts(stored)) n += update.run(row.last_error, row.stream).changes;
  return n;
}

/**
 * Leaves no byte of the erased rows in the database's files. `secure_delete` zeroes the deleted cells,
 * but earlier page splits left stale copies of cells in other pages' free space; VACUUM rebuilds every
 * page, and the WAL is then checkpointed and truncated. Costs a rewrite of the database (time and
 * free space about its size): an erasure request is rare and must be complete. Ends the pending mark
 * once done (the mark's own deletion touches only the `meta` page). Call once every file is done.
 *
 * Returns false when another connection keeps it from finishing within the busy timeout: a reader's
 * snapshot pins the old pages (the checkpoint cannot copy the rebuilt ones over them), a writer keeps
 * VACUUM out. The mark then stays, and the next call finishes the work.
 */
export function scrubFreePages(db: Db): boolean {
  if (!rebuild(db)) return false;
  endErasure(db);
  // Only the meta page is in the log now: a reader arriving meanwhile holds no erased byte.
  truncateWal(db);
  return true;
}

/**
 * VACUUM with secure_delete on, then the WAL checkpointed and truncated: no deleted byte is left in
 * free pages, page slack or the log. False when another connection kept it from finishing.
 */
export function rebuild(db: Db): boolean {
  db.pragma('secure_delete = ON');
  try {
    db.exec('VACUUM');
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
  return truncateWal(db);
}

/**
 * Checkpoints the whole WAL into the database and truncates it. TRUNCATE waits for readers (the busy
 * timeout), then reports `busy` rather than failing: the result is the only sign it did not finish.
 */
function truncateWal(db: Db): boolean {
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return r !== undefined && r.busy === 0 && r.log === r.checkpointed;
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
}

function isBusy(err: unknown): boolean {
  const code = errorCode(err) ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}
