/**
 * Erasing from the SQLite mirror's tables the records an erasure's rule takes (store/model/erase-rule.ts):
 * one candidate's (`forget --user`), as a data controller must on an erasure request: every row of
 * theirs (score details and eval results included), their score details inside other candidates'
 * records, and their e-mail and ids in the streams' error texts; or the results dated before a cut
 * (`forget --older-than`, a retention), with their score details and eval results. The copies of the
 * records in other tables (store/model/erase-tables.ts) go with them.
 * Who is theirs: store/model/person.ts, the rule every store shares.
 *
 * The database deletes with `secure_delete` on, is rebuilt by VACUUM and its WAL truncated, so the
 * deleted bytes are overwritten rather than left in free space, free pages or the log. The NDJSON
 * files are erase-ndjson.ts's; the order of the whole erasure and its finishing after a crash,
 * erasure.ts's.
 */
import { type ErasedCounts, errorsWithout, type StoredError } from '../../core/email.js';
import { parseJson, toJson } from '../../core/json.js';
import { errorCode } from '../../errors.js';
import { type EraseRule, innerRule, instant, judge, recordTime } from '../model/erase-rule.js';
import { COPY_TABLES, type CopyTable } from '../model/erase-tables.js';
import type { Person, PersonGraph } from '../model/person.js';
import { detailValues, roleRow, sessionRow } from '../model/rows.js';
import type { Db } from './db.js';
import { forgetDriftExamples } from './drift-ledger.js';
import { endErasure } from './erasure-mark.js';
import { update } from './sql.js';

type Obj = Record<string, unknown>;

/** The rows removed (core/email.ts), and the records kept without the candidate's part in them. */
export type MirrorCounts = Omit<ErasedCounts, 'error_texts'> & {
  /** Rows removed from each table of copies (store/model/erase-tables.ts) that had any. */
  copies: Record<string, number>;
};

const TABLES = ['session_results', 'role_results', 'score_details', 'past_versions'] as const;

function parsed(raw: string): unknown {
  try {
    return parseJson(raw);
  } catch {
    return undefined;
  }
}

/** Feeds every stored record (each table's `raw`, and its user columns) to the graph that tells who is who. */
export function gatherFromMirror(db: Db, graph: PersonGraph): void {
  for (const table of TABLES) {
    for (const row of db.prepare(`SELECT user_id, user_email, raw FROM ${table}`).iterate() as Iterable<Row>) {
      graph.add({ user_id: row.user_id, user_email: row.user_email });
      if (row.raw !== null) graph.add(parsed(row.raw));
    }
  }
}

interface Row {
  id: string;
  campaign_id: string;
  user_id: string | null;
  user_email: string | null;
  raw: string;
}

/** A past version (store/sqlite/migrations/v9.ts): a deletion has no raw. */
interface VersionRow extends Omit<Row, 'raw'> {
  rid: bigint;
  kind: string;
  raw: string | null;
}

/** The rows of `table` the rule takes: whole, and others' without the person (rewritten, in place). */
function scan<R extends Omit<Row, 'raw'> & { raw: string | null }>(
  db: Db,
  sql: string,
  rule: EraseRule,
): { whole: R[]; part: Array<{ row: R; record: Obj }> } {
  const whole: R[] = [];
  const part: Array<{ row: R; record: Obj }> = [];
  for (const row of db.prepare(sql).safeIntegers(true).iterate() as Iterable<R>) {
    // The columns are read from the record: they name the same person, unless changed by hand.
    const s = judge(row.raw === null ? undefined : parsed(row.raw), rule, { user_id: row.user_id, user_email: row.user_email });
    // A retention may take most of the mirror: what goes is kept by its columns, not its text.
    if (s.kind === 'whole') whole.push({ ...row, raw: '' });
    else if (s.kind === 'part') part.push({ row, record: s.value as Obj });
  }
  return { whole, part };
}

/**
 * Erases what the rule takes from the tables. Call inside the erasure's transaction, with
 * secure_delete on. A record kept without the candidate's part has its row rewritten from its new
 * text, every column.
 */
export function eraseFromMirror(db: Db, rule: EraseRule): MirrorCounts {
  const sessions = scan<Row & { order_index: bigint }>(
    db,
    'SELECT id, campaign_id, user_id, user_email, order_index, raw FROM session_results',
    rule,
  );
  const roles = scan<Row & { order_index: bigint; report_type: string | null }>(
    db,
    'SELECT id, campaign_id, user_id, user_email, order_index, report_type, raw FROM role_results',
    rule,
  );
  // A score detail goes with its result; by itself only as the person's (its own date is not the assessment's).
  const inner = innerRule(rule);
  const details =
    inner.person === undefined
      ? { whole: [], part: [] }
      : scan<Row & { role_result_id: string; position: number | bigint | null }>(
          db,
          'SELECT id, role_result_id, campaign_id, user_id, user_email, position, raw FROM score_details',
          inner,
        );
  let evals = 0;
  let removedDetails = 0;
  const deleteEvals = db.prepare('DELETE FROM eval_results WHERE parent_type = ? AND parent_id = ?');
  const uncount = db.prepare('UPDATE sync_state SET records = max(0, records - 1) WHERE stream = ?');
  const detailIds = db.prepare('SELECT id FROM score_details WHERE role_result_id = ?').pluck();
  const deleteDetailsOf = db.prepare('DELETE FROM score_details WHERE role_result_id = ?');
  const deleteDetail = db.prepare('DELETE FROM score_details WHERE id = ?');
  const deleteSession = db.prepare('DELETE FROM session_results WHERE id = ?');
  const deleteRole = db.prepare('DELETE FROM role_results WHERE id = ?');
  const rewrite = {
    session: db.prepare(update('session_results')),
    role: db.prepare(update('role_results')),
    detail: db.prepare(update('score_details')),
  };
  for (const s of sessions.whole) {
    evals += deleteEvals.run('session_result', s.id).changes;
    deleteSession.run(s.id);
    uncount.run(`${s.campaign_id}/session`);
  }
  for (const r of roles.whole) {
    for (const d of detailIds.all(r.id) as string[]) evals += deleteEvals.run('score_detail', d).changes;
    removedDetails += deleteDetailsOf.run(r.id).changes;
    deleteRole.run(r.id);
    uncount.run(`${r.campaign_id}/role/${r.report_type}`);
  }
  const gone = new Set(roles.whole.map((r) => r.id));
  forgetDriftExamples(db, [...sessions.whole.map((s) => s.id), ...gone]);
  // Their score details under another's record: theirs too (under their own, already gone).
  for (const d of details.whole) {
    if (gone.has(d.role_result_id)) continue;
    evals += deleteEvals.run('score_detail', d.id).changes;
    removedDetails += deleteDetail.run(d.id).changes;
  }
  const checked = (r: Row & { order_index: bigint }, record: Obj) => ({ record, id: r.id, orderIndex: r.order_index, raw: toJson(record) });
  for (const { row, record } of sessions.part) {
    rewrite.session.run(...sessionRow(checked(row, record), row.campaign_id));
  }
  for (const { row, record } of roles.part) {
    const r = checked(row, record);
    rewrite.role.run(...roleRow(r, row.campaign_id, row.report_type ?? '', r.raw));
  }
  let nestedDetails = 0;
  for (const { row, record } of details.part) {
    if (gone.has(row.role_result_id)) continue;
    nestedDetails++;
    rewrite.detail.run(...detailValues(row.role_result_id, row.campaign_id, record, toJson(record), Number(row.position ?? 0)));
  }
  const records = new Set([...sessions.whole.map((r) => r.id), ...roles.whole.map((r) => r.id)]);
  // A person's past versions: every version of a record of theirs, found by any version's top.
  const versions =
    rule.person === undefined
      ? { removed: 0, changed: 0 }
      : eraseVersions(
          db,
          rule.person,
          new Set([...sessions.whole.map((r) => `session\u0000${r.id}`), ...roles.whole.map((r) => `role\u0000${r.id}`)]),
        );
  const copies: Record<string, number> = {};
  if (versions.removed > 0) copies.past_versions = versions.removed;
  let copiesChanged = versions.changed;
  // A cut's copies, by their dates and the results it removed. A person's are erased by eraseVersions
  // above and, in the quarantine, by the text match of erasure.ts (SqliteQuarantine.erase): this walk
  // judges by the date alone, so no version is walked twice for the same reason.
  if (rule.before !== undefined) {
    for (const t of COPY_TABLES) {
      const done = eraseCopies(db, t, { before: rule.before }, records);
      if (done === undefined) continue;
      if (done.removed > 0) copies[t.table] = (copies[t.table] ?? 0) + done.removed;
      copiesChanged += done.changed;
    }
  }
  return {
    session_results: sessions.whole.length,
    role_results: roles.whole.length,
    score_details: removedDetails,
    eval_results: evals,
    records_changed: sessions.part.length + roles.part.length + nestedDetails + copiesChanged,
    result_versions: copies.past_versions ?? 0,
    quarantined: copies.quarantine ?? 0,
    copies,
  };
}

/** Whether the database has the table and its columns (a table of copies a later schema adds). */
function hasColumns(db: Db, table: string, columns: string[]): boolean {
  const have = new Set(db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]);
  return have.size > 0 && columns.every((c) => have.has(c));
}

/**
 * Erases the copies the rule takes from one table of copies (store/model/erase-tables.ts), and the
 * copies of the records in `records` (the ids of the results it removed). Undefined when the
 * database has no such table.
 */
function eraseCopies(
  db: Db,
  t: CopyTable,
  rule: EraseRule,
  records: ReadonlySet<string>,
): { removed: number; changed: number } | undefined {
  if (!hasColumns(db, t.table, [t.raw, t.recordId, t.stored])) return undefined;
  const remove = db.prepare(`DELETE FROM ${t.table} WHERE rowid = ?`);
  const rewrite = db.prepare(`UPDATE ${t.table} SET ${t.raw} = ? WHERE rowid = ?`);
  const whole: bigint[] = [];
  const part: Array<{ rid: bigint; text: string }> = [];
  const rows = db
    .prepare(`SELECT rowid AS rid, ${t.raw} AS raw, ${t.recordId} AS record_id, ${t.stored} AS stored FROM ${t.table}`)
    .safeIntegers(true)
    .iterate() as Iterable<{ rid: bigint; raw: unknown; record_id: unknown; stored: unknown }>;
  for (const row of rows) {
    const gone = row.record_id !== null && records.has(String(row.record_id));
    const value = row.raw === null ? undefined : parsed(String(row.raw));
    // Dated by its record when its text says when; else by when the mirror stored it.
    const stored = instant(row.stored);
    const old = rule.before !== undefined && recordTime(value) === undefined && stored !== undefined && stored < rule.before;
    const s = gone || old ? ({ kind: 'whole' } as const) : judge(value, rule);
    if (s.kind === 'whole') whole.push(row.rid);
    else if (s.kind === 'part') part.push({ rid: row.rid, text: toJson(s.value) });
  }
  let removed = 0;
  let changed = 0;
  for (const rid of whole) removed += remove.run(rid).changes;
  for (const p of part) changed += rewrite.run(p.text, p.rid).changes;
  return { removed, changed };
}

/**
 * The person's past versions (schema 9): every version of a record that names them at its top in
 * any version (or whose current row went as theirs: `theirs`, by kind and id) is deleted; a version
 * of another's record that holds them is kept without them, as the current rows are.
 */
function eraseVersions(db: Db, p: Person, theirs: Set<string>): { removed: number; changed: number } {
  const present = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'past_versions'").get();
  if (present === undefined) return { removed: 0, changed: 0 };
  const { whole, part } = scan<VersionRow>(db, 'SELECT rowid AS rid, kind, id, campaign_id, user_id, user_email, raw FROM past_versions', {
    person: p,
  });
  for (const v of whole) theirs.add(`${v.kind}\u0000${v.id}`);
  const remove = db.prepare('DELETE FROM past_versions WHERE kind = ? AND id = ?');
  let removed = 0;
  for (const key of theirs) {
    const [kind, id] = key.split('\u0000') as [string, string];
    removed += remove.run(kind, id).changes;
  }
  const rewrite = db.prepare('UPDATE past_versions SET raw = ? WHERE rowid = ?');
  let changed = 0;
  for (const { row, record } of part) {
    if (theirs.has(`${row.kind}\u0000${row.id}`)) continue;
    changed += rewrite.run(toJson(record), row.rid).changes;
  }
  return { removed, changed };
}

/**
 * The streams' last errors without the candidate (core/email.ts withoutCandidate): a service's error
 * message may quote the e-mail of a record it failed on, and `status` and watch's /healthz show the
 * text. `terms`: what forget was given and every id and e-mail of the person. Returns how many were
 * changed. Call inside the erasure's transaction.
 */
export function scrubErrors(db: Db, terms: string[]): number {
  const update = db.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?');
  const stored = db.prepare('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL').all() as StoredError[];
  let n = 0;
  for (const row of errorsWithout(stored, terms)) n += update.run(row.last_error, row.stream).changes;
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
  db.pragma('secure_delete = ON');
  try {
    db.exec('VACUUM');
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
  if (!truncateWal(db)) return false;
  endErasure(db);
  // Only the meta page is in the log now: a reader arriving meanwhile holds no erased byte.
  truncateWal(db);
  return true;
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
