/**
 * An erasure in the PostgreSQL mirror, by the rule every store shares (store/model/erase-rule.ts):
 * `forget --older-than` (a retention): the results dated before a cut, with their score details, eval
 * results and copies (store/model/erase-tables.ts); `forget --user`: one candidate's results, score
 * details and eval results deleted, their score details inside other candidates' records taken out, their e-mail and ids
 * scrubbed from the streams' errors, in one transaction, with the rule every store shares
 * (store/model/person.ts) and their streams' counts lowered, as store/sqlite/erase-rows.ts does in SQLite. PostgreSQL
 * keeps dead row versions until VACUUM: the changed tables are vacuumed after the commit (a plain
 * VACUUM, which makes the space reusable; the server's WAL and backups are the operator's to age out).
 */
import type pg from 'pg';
import { type ErasedCounts, errorsWithout, type StoredError } from '../../core/email.js';
import { parseJson, toJson } from '../../core/json.js';
import { ERASED_EXAMPLE } from '../model/drift.js';
import { type EraseRule, innerRule, instant, judge, recordTime } from '../model/erase-rule.js';
import { COPY_TABLES, type CopyTable } from '../model/erase-tables.js';
import { names, type Person, PersonGraph, quarantinedNames, scrubPerson } from '../model/person.js';
import type { PgDatabase } from './database.js';
import { jsonText } from './statements.js';

type Obj = Record<string, unknown>;

const TABLES = ['session_results', 'role_results', 'score_details'] as const;
type Table = (typeof TABLES)[number];

/** Rows read per query: a mirror is read in pages by id, never whole into memory. */
const PAGE = 2000;

interface Row {
  id: string;
  raw: string;
  user_id: string | null;
  user_email: string | null;
  stream: string | null;
  role_result_id: string | null;
}

const EXTRA: Record<Table, string> = {
  session_results: "campaign_id || '/session' AS stream, NULL AS role_result_id",
  role_results: "campaign_id || '/role/' || coalesce(report_type, '') AS stream, NULL AS role_result_id",
  score_details: 'NULL AS stream, role_result_id',
};

/** Each row of `table` (its text, parsed), a page at a time. */
async function eachRow(c: pg.PoolClient, table: Table, fn: (row: Row, record: unknown) => void): Promise<void> {
  let after = '';
  for (;;) {
    const page = await c.query<Row>(
      `SELECT id, user_id, user_email, raw::text AS raw, ${EXTRA[table]} FROM ${table} WHERE id > $1 ORDER BY id LIMIT ${PAGE}`,
      [after],
    );
    for (const row of page.rows) {
      let record: unknown;
      try {
        record = parseJson(row.raw);
      } catch {
        record = undefined;
      }
      fn(row, record);
    }
    if (page.rows.length < PAGE) return;
    after = (page.rows[page.rows.length - 1] as Row).id;
  }
}

interface VersionRow {
  kind: string;
  id: string;
  version: number;
  user_id: string | null;
  user_email: string | null;
  raw: string | null;
}

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
    for (const row of page.rows) {
      let record: unknown;
      try {
        record = row.raw === null ? undefined : parseJson(row.raw);
      } catch {
        record = undefined;
      }
      fn(row, record);
    }
    if (page.rows.length < PAGE) return;
    const last = page.rows[page.rows.length - 1] as VersionRow;
    after = [last.kind, last.id, last.version];
  }
}

/**
 * The person's past versions: every version of a record that names them at its top in any version
 * (or whose current row went as theirs: `theirs`, by kind and id) is deleted; a version of another's
 * record that holds them is kept without them, as the current rows are.
 */
async function eraseVersions(c: pg.PoolClient, person: Person, theirs: Set<string>): Promise<{ removed: number; changed: number }> {
  const part: Array<{ row: VersionRow; record: Obj }> = [];
  await eachVersion(c, (row, record) => {
    const s = names({ user_id: row.user_id, user_email: row.user_email }, person)
      ? ({ kind: 'whole' } as const)
      : scrubPerson(record, person);
    if (s.kind === 'whole') theirs.add(`${row.kind}\u0000${row.id}`);
    else if (s.kind === 'part') part.push({ row, record: s.value as Obj });
  });
  const keys = [...theirs].map((k) => k.split('\u0000') as [string, string]);
  const removed =
    keys.length === 0
      ? 0
      : ((
          await c.query(
            'DELETE FROM past_versions v USING unnest($1::text[], $2::text[]) AS k(kind, id) WHERE v.kind = k.kind AND v.id = k.id',
            [keys.map((k) => k[0]), keys.map((k) => k[1])],
          )
        ).rowCount ?? 0);
  let changed = 0;
  for (const { row, record } of part) {
    if (theirs.has(`${row.kind}\u0000${row.id}`)) continue;
    changed +=
      (
        await c.query('UPDATE past_versions SET raw = $4::jsonb WHERE kind = $1 AND id = $2 AND version = $3', [
          row.kind,
          row.id,
          row.version,
          jsonb(record),
        ])
      ).rowCount ?? 0;
  }
  return { removed, changed };
}

const jsonb = (v: unknown) => (v === undefined || v === null ? null : jsonText(toJson(v)));

/** Rewrites a kept row from its record without the person: its text and the JSON columns read from it. */
const REWRITE: Record<Table, { sql: string; values: (r: Obj) => unknown[] }> = {
  session_results: {
    sql: 'UPDATE session_results SET raw = $2::jsonb, feedback = $3::jsonb, additional_scores = $4::jsonb WHERE id = $1',
    values: (r) => [jsonb(r), jsonb(r.feedback), jsonb(r.additional_scores)],
  },
  role_results: {
    sql: 'UPDATE role_results SET raw = $2::jsonb, additional_scores = $3::jsonb WHERE id = $1',
    values: (r) => [jsonb(r), jsonb(r.additional_scores)],
  },
  score_details: {
    sql: 'UPDATE score_details SET raw = $2::jsonb, feedback = $3::jsonb WHERE id = $1',
    values: (r) => [jsonb(r), jsonb(r.feedback)],
  },
};

/** What a PostgreSQL erasure removed: the rows (core/email.ts), and the rows of each table of copies that had any. */
export interface PgErased {
  rows: ErasedCounts;
  copies: Record<string, number>;
}

/** Erases the candidate `user` (an id or an e-mail) names, or the results dated before `before` (ms since the epoch). */
export async function eraseFromPg(db: PgDatabase, what: { user: string } | { before: number }): Promise<PgErased> {
  const erased = await db.transaction(async (c) => {
    let rule: EraseRule;
    let terms: string[] = [];
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
      const found = graph.find(what.user);
      rule = { person: found };
      terms = [what.user, ...found.ids, ...found.emails];
    } else rule = { before: what.before };
    const whole: Record<Table, Row[]> = { session_results: [], role_results: [], score_details: [] };
    const part: Record<Table, Array<{ id: string; record: Obj; role_result_id: string | null }>> = {
      session_results: [],
      role_results: [],
      score_details: [],
    };
    for (const t of TABLES) {
      // A score detail goes with its result; by itself only as the person's (its own date is not the assessment's).
      const r = t === 'score_details' ? innerRule(rule) : rule;
      if (r.person === undefined && r.before === undefined) continue;
      await eachRow(c, t, (row, record) => {
        const s = judge(record, r, { user_id: row.user_id, user_email: row.user_email });
        // A retention may take most of the mirror: what goes is kept by its columns, not its text.
        if (s.kind === 'whole') whole[t].push({ ...row, raw: '' });
        else if (s.kind === 'part') part[t].push({ id: row.id, record: s.value as Obj, role_result_id: row.role_result_id });
      });
    }
    const ids = (rows: Row[]) => rows.map((r) => r.id);
    const sessionIds = ids(whole.session_results);
    const roleIds = ids(whole.role_results);
    const gone = new Set(roleIds);
    let evals =
      (await c.query("DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])", [sessionIds]))
        .rowCount ?? 0;
    await c.query('DELETE FROM session_results WHERE id = ANY($1::text[])', [sessionIds]);
    // Their score details, under their role results or under another record: theirs too.
    const details = await c.query<{ id: string }>(
      'DELETE FROM score_details WHERE role_result_id = ANY($1::text[]) OR id = ANY($2::text[]) RETURNING id',
      [roleIds, ids(whole.score_details)],
    );
    evals +=
      (
        await c.query("DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id = ANY($1::text[])", [
          details.rows.map((r) => r.id),
        ])
      ).rowCount ?? 0;
    await c.query('DELETE FROM role_results WHERE id = ANY($1::text[])', [roleIds]);
    // The drift examples among them: the path or value stays, the record's id goes (store/sqlite/drift-ledger.ts).
    if ((await c.query("SELECT to_regclass('drift_seen') IS NOT NULL AS t")).rows[0]?.t === true)
      await c.query('UPDATE drift_seen SET record_id = $1 WHERE record_id = ANY($2::text[])', [
        ERASED_EXAMPLE,
        [...sessionIds, ...roleIds],
      ]);
    const streams = [...whole.session_results, ...whole.role_results].map((r) => r.stream as string);
    for (const stream of streams) await c.query('UPDATE sync_state SET records = greatest(0, records - 1) WHERE stream = $1', [stream]);
    let changed = 0;
    for (const t of TABLES) {
      for (const p of part[t]) {
        if (p.role_result_id !== null && gone.has(p.role_result_id)) continue;
        changed += (await c.query(REWRITE[t].sql, [p.id, ...REWRITE[t].values(p.record)])).rowCount ?? 0;
      }
    }
    const copies: Record<string, number> = {};
    // A person's past versions: every version of a record of theirs, found by any version's top.
    if (rule.person !== undefined) {
      const versions = await eraseVersions(
        c,
        rule.person,
        new Set([...sessionIds.map((id) => `session\u0000${id}`), ...roleIds.map((id) => `role\u0000${id}`)]),
      );
      if (versions.removed > 0) copies.past_versions = versions.removed;
      changed += versions.changed;
    }
    // A cut's copies, by their dates and the results it removed. A person's are erased by
    // eraseVersions above and by the quarantine's text match below: this walk judges by the date alone.
    if (rule.before !== undefined) {
      const records = new Set([...sessionIds, ...roleIds]);
      for (const t of COPY_TABLES) {
        const done = await eraseCopies(c, t, { before: rule.before }, records);
        if (done === undefined) continue;
        if (done.removed > 0) copies[t.table] = (copies[t.table] ?? 0) + done.removed;
        changed += done.changed;
      }
    }
    // A service's error message may quote the candidate; status and /healthz show the stored text.
    let errorTexts = 0;
    if (terms.length > 0) {
      const stored = await c.query<StoredError>('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL');
      for (const row of errorsWithout(stored.rows, terms)) {
        errorTexts +=
          (await c.query('UPDATE sync_state SET last_error = $1 WHERE stream = $2', [row.last_error, row.stream])).rowCount ?? 0;
      }
    }
    // Quarantined copies naming them, by the text as received too (store/model/person.ts quarantinedNames).
    if (rule.person !== undefined) {
      const person = rule.person;
      const held = await c.query<{ id: string; raw: string }>('SELECT id, raw FROM quarantine');
      const named = held.rows.filter((r) => quarantinedNames(r.raw, person, terms)).map((r) => r.id);
      if (named.length > 0) {
        await c.query('DELETE FROM quarantine WHERE id = ANY($1::bigint[])', [named]);
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
    return { rows, copies };
  });
  const { rows, copies } = erased;
  if (rows.session_results + rows.role_results + rows.score_details + rows.records_changed + rows.error_texts > 0) {
    await db.query('VACUUM session_results, role_results, score_details, eval_results, sync_state', [], 'cannot vacuum');
  }
  // Identifiers from the fixed list of copies, never from input. A version kept without the person
  // was rewritten: it counts among the changed records.
  const vacuum = new Set(Object.keys(copies));
  if (rows.records_changed > 0) vacuum.add('past_versions');
  if (vacuum.size > 0) await db.query(`VACUUM ${[...vacuum].join(', ')}`, [], 'cannot vacuum');
  return erased;
}

/**
 * Erases the copies the rule takes from one table of copies (store/model/erase-tables.ts), and the
 * copies of the records in `records` (the ids of the results it removed), a page at a time by the
 * row's physical address (stable within the transaction: every stream's lease keeps writers out).
 * Undefined when the schema has no such table.
 */
async function eraseCopies(
  c: pg.PoolClient,
  t: CopyTable,
  rule: EraseRule,
  records: ReadonlySet<string>,
): Promise<{ removed: number; changed: number } | undefined> {
  const cols = await c.query<{ column_name: string }>(
    'SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
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
      const gone = row.record_id !== null && records.has(row.record_id);
      let value: unknown;
      try {
        value = row.raw === null ? undefined : parseJson(row.raw);
      } catch {
        value = undefined;
      }
      // Dated by its record when its text says when; else by when the mirror stored it.
      const stored = instant(row.stored);
      const old = rule.before !== undefined && recordTime(value) === undefined && stored !== undefined && stored < rule.before;
      const s = gone || old ? ({ kind: 'whole' } as const) : judge(value, rule);
      if (s.kind === 'whole') whole.push(row.at);
      else if (s.kind === 'part') part.push({ at: row.at, text: toJson(s.value) });
    }
    if (page.rows.length < PAGE) break;
    after = (page.rows[page.rows.length - 1] as { at: string }).at;
  }
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
