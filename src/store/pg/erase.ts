/**
 * `forget --user` in the PostgreSQL mirror: one candidate's results, score details and eval results
 * deleted, their score details inside other candidates' records taken out, their e-mail and ids
 * scrubbed from the streams' errors, in one transaction, with the rule every store shares
 * (store/model/person.ts) and their streams' counts lowered, as store/erase.ts does in SQLite. PostgreSQL
 * keeps dead row versions until VACUUM: the changed tables are vacuumed after the commit (a plain
 * VACUUM, which makes the space reusable; the server's WAL and backups are the operator's to age out).
 */
import type pg from 'pg';
import { type ErasedCounts, errorsWithout, type StoredError } from '../../core/email.js';
import { parseJson, toJson } from '../../core/json.js';
import { names, type Person, PersonGraph, scrubPerson } from '../model/person.js';
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

export async function eraseFromPg(db: PgDatabase, user: string): Promise<ErasedCounts> {
  const erased = await db.transaction(async (c) => {
    const graph = new PersonGraph();
    for (const t of TABLES) {
      await eachRow(c, t, (row, record) => {
        graph.add({ user_id: row.user_id, user_email: row.user_email });
        graph.add(record);
      });
    }
    const found = graph.find(user);
    const person: Person = found;
    const whole: Record<Table, Row[]> = { session_results: [], role_results: [], score_details: [] };
    const part: Record<Table, Array<{ id: string; record: Obj; role_result_id: string | null }>> = {
      session_results: [],
      role_results: [],
      score_details: [],
    };
    for (const t of TABLES) {
      await eachRow(c, t, (row, record) => {
        // The columns are read from the record: they name the same person, unless changed by hand.
        const byColumn = names({ user_id: row.user_id, user_email: row.user_email }, person);
        const s = byColumn ? ({ kind: 'whole' } as const) : scrubPerson(record, person);
        if (s.kind === 'whole') whole[t].push(row);
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
    const streams = [...whole.session_results, ...whole.role_results].map((r) => r.stream as string);
    for (const stream of streams) await c.query('UPDATE sync_state SET records = greatest(0, records - 1) WHERE stream = $1', [stream]);
    let changed = 0;
    for (const t of TABLES) {
      for (const p of part[t]) {
        if (p.role_result_id !== null && gone.has(p.role_result_id)) continue;
        changed += (await c.query(REWRITE[t].sql, [p.id, ...REWRITE[t].values(p.record)])).rowCount ?? 0;
      }
    }
    // A service's error message may quote the candidate; status and /healthz show the stored text.
    const terms = [user, ...found.ids, ...found.emails];
    let errorTexts = 0;
    const stored = await c.query<StoredError>('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL');
    for (const row of errorsWithout(stored.rows, terms)) {
      errorTexts += (await c.query('UPDATE sync_state SET last_error = $1 WHERE stream = $2', [row.last_error, row.stream])).rowCount ?? 0;
    }
    return {
      session_results: sessionIds.length,
      role_results: roleIds.length,
      score_details: details.rowCount ?? 0,
      eval_results: evals,
      records_changed: changed,
      error_texts: errorTexts,
    };
  });
  if (erased.session_results + erased.role_results + erased.score_details + erased.records_changed + erased.error_texts > 0) {
    await db.query('VACUUM session_results, role_results, score_details, eval_results, sync_state', [], 'cannot vacuum');
  }
  return erased;
}

/** Every stream of the mirror (forget holds all their leases, so no pull writes the user back meanwhile). */
export async function allStreams(db: PgDatabase): Promise<string[]> {
  return (await db.query<{ stream: string }>('SELECT stream FROM sync_state')).rows.map((r) => r.stream);
}
