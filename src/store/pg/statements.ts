/**
 * Bulk statements of the PostgreSQL mirror, built from the column lists of store/model/rows.ts, so a page is
 * one INSERT … ON CONFLICT per table whatever its size (no parameter limit, one round trip). A table
 * with a jsonb column (a record's `raw`) takes its rows as one jsonb parameter, an array of rows each
 * an array of cells, read back with `jsonb_array_elements`: a record's JSON text is written into it as
 * it is, `[text]`, where one array literal per column cost the driver an escaping pass over every
 * `raw` and the server an unescaping one (docs/performance.md). eval_results, short text cells only, keeps one array per column through `unnest`, which
 * costs both sides less there. Values keep the SQLite mapping; only the column types differ
 * (schema.ts), and a timestamptz column takes a time in its normal form (store/model/times.ts: a time
 * without a zone is UTC, digits past the microsecond cut), or NULL for what is not a time (raw keeps it).
 */
import { COLUMNS, type Table, type Values } from '../model/rows.js';
import { normalTime } from '../model/times.js';
import { CHANGE_CTES, CHANGE_SEQ, seenCte } from './changes.js';
import { MIRROR_SCHEMA } from './schema.js';

type PgType = 'text' | 'float8' | 'int4' | 'int8' | 'jsonb' | 'timestamptz';

const TYPES: Record<string, PgType> = {
  score: 'float8',
  overall_score: 'float8',
  order_index: 'int8',
  position: 'int4',
  raw: 'jsonb',
  feedback: 'jsonb',
  additional_scores: 'jsonb',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
  evaluated_at: 'timestamptz',
  seen_at: 'timestamptz',
};

/** The PostgreSQL type of a column (score details' times are text: they may carry no zone). */
function typeOf(table: Table, column: string): PgType {
  if (table === 'score_details' && (column === 'created_at' || column === 'updated_at')) return 'text';
  return TYPES[column] ?? 'text';
}

/** The table's columns in the order of its rows' values (the key last for keyed tables). */
function columnsOf(table: Table): string[] {
  return table === 'eval_results' ? [...COLUMNS[table]] : [...COLUMNS[table], 'id'];
}

/**
 * A time as the instant SQLite's export gives for the same text, else NULL: PostgreSQL would reject
 * the page for one odd value, read a time without a zone in the connection's TimeZone, and round the
 * digits past the microsecond where the rule cuts them.
 */
const zoned = normalTime;

/**
 * PostgreSQL cannot store U+0000 in text or jsonb, nor a lone surrogate in jsonb (it rejects the whole
 * statement). A record never holds either: the record rules quarantine such a record before any sink
 * sees it (store/model/storable.ts unstorable), on every backend alike. What has no quarantine (a
 * campaign of the list) is kept with U+FFFD, the replacement character, in place of each, rather than
 * fail every pull. A JSON text (core/json.ts) writes a lone surrogate as a `\udXXX` escape (a pair is
 * written as the character itself), and U+0000 as `\u0000`.
 */
export const UNSTORABLE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi;

/** A JSON text with each unstorable escape (not an escaped backslash before `u…`) as `\ufffd`. */
export function jsonText<T>(v: T): T {
  return typeof v === 'string' && v.includes('\\u') ? (v.replace(UNSTORABLE, '$1\\ufffd') as T) : v;
}

/** A text value with each U+0000 and each lone surrogate as U+FFFD: jsonb takes neither. */
function plainText(v: string): string {
  const t = (v as WellFormed).isWellFormed() ? v : (v as WellFormed).toWellFormed();
  return t.includes('\u0000') ? t.replaceAll('\u0000', '\ufffd') : t;
}
/** ES2024's String methods, in Node since 20 (the compiler's lib is ES2023). */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** What JSON.stringify would escape, and what plainText would replace (U+0000, a surrogate that may be lone). */
const JSON_SPECIAL = /["\\\u0000-\u001f\ud800-\udfff]/;

/** Rows (each in COLUMNS order) -> one array per column, converted where the PostgreSQL type needs it. */
function toColumns(table: Table, rows: Values[]): unknown[][] {
  const cols = columnsOf(table);
  const out: unknown[][] = cols.map(() => new Array(rows.length));
  cols.forEach((c, j) => {
    const type = typeOf(table, c);
    const column = out[j] as unknown[];
    for (let i = 0; i < rows.length; i++) {
      const v = (rows[i] as Values)[j];
      column[i] = type === 'timestamptz' ? zoned(v) : type === 'text' && typeof v === 'string' ? plainText(v) : v;
    }
  });
  return out;
}

/** One value in a page's jsonb: a jsonb column's JSON text as `[text]` (`[null]` stays JSON null, NULL is `null`). */
function cell(type: PgType, v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (type === 'jsonb') return `[${jsonText(v as string)}]`;
  if (type === 'timestamptz') {
    const t = zoned(v);
    return t === null ? 'null' : JSON.stringify(t);
  }
  if (typeof v === 'string') {
    // Most cells need no escape and hold no NUL or surrogate: quoted as they are.
    if (!JSON_SPECIAL.test(v)) return `"${v}"`;
    return JSON.stringify(type === 'text' ? plainText(v) : v);
  }
  // Numbers (finite: rows.ts makes the others NULL) and bigints, as JSON numbers.
  return String(v);
}

/**
 * Rows (each in COLUMNS order, the key last) as one page parameter: the JSON text of an array of rows,
 * each an array of cells (`cell`), read by `fromPage(table)`.
 */
function toPage(table: Table, rows: Values[]): string {
  const types = columnsOf(table).map((c) => typeOf(table, c));
  const parts: string[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Values;
    let line = '[';
    for (let j = 0; j < types.length; j++) line += (j === 0 ? '' : ',') + cell(types[j] as PgType, row[j]);
    parts[i] = `${line}]`;
  }
  return `[${parts.join(',')}]`;
}

/**
 * The rows of a page parameter ($1), typed per column: jsonb cells unwrapped, others cast from their
 * text; `extra` values last (the same for every row).
 */
function fromPage(table: Table, extra: string[] = []): string {
  const select = columnsOf(table).map((c, i) => {
    const type = typeOf(table, c);
    // A jsonb cell is `[value]`, or JSON null for SQL NULL: `->0` of that null is jsonb null, not NULL.
    return type === 'jsonb' ? `nullif(e->${i}, 'null'::jsonb)->0` : type === 'text' ? `e->>${i}` : `(e->>${i})::${type}`;
  });
  return `SELECT ${[...select, ...extra].join(', ')} FROM jsonb_array_elements($1::jsonb) AS e`;
}

const byPage = (table: Table) => columnsOf(table).some((c) => typeOf(table, c) === 'jsonb');

/** The parameters of a bulk statement of `table` for `rows`: the page (toPage), or one array per column. */
export function rowParams(table: Table, rows: Values[]): unknown[] {
  return byPage(table) ? [toPage(table, rows)] : toColumns(table, rows);
}

/** How many parameters rowParams gives (withCheckpoint's follow them). */
export function rowParamCount(table: Table): number {
  return byPage(table) ? 1 : columnsOf(table).length;
}

/** The rows of `table`'s column arrays, the first at parameter `$first`. */
function unnest(table: Table, first = 1): string {
  return `SELECT * FROM unnest(${columnsOf(table)
    .map((c, i) => `$${i + first}::${typeOf(table, c)}[]`)
    .join(', ')})`;
}

/** The rows of rowParams' parameters, typed per column. */
function fromRows(table: Table): string {
  return byPage(table) ? fromPage(table) : unnest(table);
}

/**
 * Inserts new rows and rewrites rows whose raw changed; returns the rows it wrote with `inserted`
 * (xmax = 0: a fresh row). A row read again unchanged is left alone and not returned, and so is a
 * result another campaign holds (store/sqlite/conflicts.ts: the campaign that stored an id first keeps it).
 * Results (session and role) it writes are stamped with the page's change number: the statement
 * must define CHANGE_CTES (changes.ts), as withCheckpoint and withTicket do.
 */
export function upsertChanged(
  table: 'session_results' | 'role_results' | 'campaigns' | 'score_details',
  onlyChanged = true,
  /** A condition on the page's rows (evaluated once, before the first row is written). */
  gate?: string,
): string {
  const results = table === 'session_results' || table === 'role_results';
  const cols = results ? [...columnsOf(table), 'change_seq'] : columnsOf(table);
  const rows = results ? fromPage(table, [CHANGE_SEQ]) : fromRows(table);
  const set = cols
    .filter((c) => c !== 'id')
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  const own = results ? ` AND ${table}.campaign_id = excluded.campaign_id` : '';
  const where = onlyChanged ? ` WHERE ${table}.raw IS DISTINCT FROM excluded.raw${own}` : '';
  return `INSERT INTO ${table} (${cols.join(', ')}) ${rows}${gate === undefined ? '' : ` WHERE ${gate}`} ON CONFLICT (id) DO UPDATE SET ${set}${where} RETURNING id, (xmax = 0) AS inserted`;
}

/**
 * Rewrites stored rows, every column but the key, from rowParams of `table` (`$1`): a record kept
 * without an erased candidate's part (store/model/erasure-plan.ts). Its change number stays: a rewrite
 * by an erasure is no new version of the record.
 */
export function rewriteRows(table: 'session_results' | 'role_results' | 'score_details'): string {
  const cols = columnsOf(table);
  const set = cols
    .filter((c) => c !== 'id')
    .map((c) => `${c} = r.${c}`)
    .join(', ');
  return `UPDATE ${table} AS t SET ${set} FROM (${fromRows(table)}) AS r (${cols.join(', ')}) WHERE t.id = r.id`;
}

/** Inserts the rows whose key is new; returns their ids. */
function insertNew(table: 'score_details'): string {
  return `INSERT INTO ${table} (${columnsOf(table).join(', ')}) ${fromRows(table)} ON CONFLICT (id) DO NOTHING RETURNING id`;
}

/** A CTE `name` inserting the eval results of rowParams (from `$first`) whose parent is among `parents` (a query of ids). */
function evalsOf(name: string, first: number, parents: string): string {
  const cols = columnsOf('eval_results').join(', ');
  return `${name} AS (INSERT INTO eval_results (${cols}) SELECT * FROM (${unnest('eval_results', first)}) AS e (${cols}) WHERE e.parent_id IN (${parents}))`;
}

/**
 * insertNew of score details (`$1`) with, in the same statement, the eval results (rowParams of
 * eval_results, from `$2`) of those it inserted: a detail id another result holds keeps its own.
 * Returns the ids of the details inserted.
 */
export function detailsWithEvals(): string {
  return `WITH d AS (${insertNew('score_details')}), ${evalsOf('evals', 2, 'SELECT id FROM d')} SELECT id FROM d`;
}

/**
 * A page's upsert of `table` (upsertChanged) with the page's checkpoint and the stream's lease in the
 * same statement: the compare-and-set of sync_state (cursor from `$n+3` to `$n+1`, or kept when `$n+4`
 * is false, and the count of new rows added) as a data-modifying CTE. When it did not move (another
 * process moved the checkpoint), the statement fails with `CHECKPOINT_CONFLICT` in its message, so
 * nothing of the page is written even outside a transaction. It returns the rows written (`id`,
 * `inserted`) and a last row with a NULL id. `$n+5` is the page's request id (changes.ts seenCte).
 * The lease (`$n+6`, worker `$n+7`, token `$n+8`) is read FOR SHARE first (fenceCte): when it is no
 * longer the worker's, no row is written and the statement fails with LEASE_LOST in its message; the
 * row lock holds until the page's transaction ends, so the page's later statements are fenced too. A
 * NULL lease is no fence (a write outside any lease: tests of the statements). `more`: further CTEs,
 * after `w` and `c`.
 */
export function withCheckpoint(table: 'session_results' | 'role_results', params: number, more: string[] = []): string {
  const lease = params + 6;
  const fenced = `($${lease}::text IS NULL OR ${FENCED})`;
  const upsert = upsertChanged(table, true, fenced);
  return `WITH ${CHANGE_CTES}, ${fenceCte(lease)}, w AS (${upsert}), ${seenCte(params + 5)}, ${moveCheckpoint(params, (cursor) => cursor)}${more.map((cte) => `,\n${cte}`).join('')}
SELECT id, inserted FROM w UNION ALL SELECT NULL, ${fencedOr(fenced, moved)}`;
}

/**
 * withCheckpoint of session results with their eval results, so that a page of session results is one
 * statement: the eval results (rowParams of eval_results, from `$n+9`) of the results `w` wrote (new
 * or changed) are inserted, and those stored before of the results it rewrote are deleted. The two
 * CTEs see the table as it was when the statement began: the delete takes none of the rows inserted.
 */
export function sessionPage(params: number): string {
  return withCheckpoint('session_results', params, [
    "evals_gone AS (DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id IN (SELECT id FROM w WHERE NOT inserted))",
    evalsOf('evals_new', params + 9, 'SELECT id FROM w'),
  ]);
}

/**
 * The CTE `fence`: the stream's lease row (stream `$lease`, worker `$lease+1`, token `$lease+2`) if it
 * is still the worker's, locked FOR SHARE (leases.ts fence: a taker's update waits for the page's
 * transaction to end). Materialised: read once, before the page's rows are written.
 */
function fenceCte(lease: number): string {
  return `fence AS MATERIALIZED (SELECT 1 FROM leases WHERE stream = $${lease}::text AND worker = $${lease + 1}::text AND token = $${lease + 2}::bigint FOR SHARE)`;
}

/** True when fenceCte found the lease still the worker's. */
const FENCED = '(SELECT count(*) FROM fence) = 1';

/** `then` when `fenced`, else an error whose message holds LEASE_LOST. */
const fencedOr = (fenced: string, then: string) =>
  `CASE WHEN ${fenced} THEN ${then} ELSE ('${LEASE_LOST} ' || (SELECT count(*) FROM fence))::int > 0 END`;

/**
 * The CTE `c`: sync_state's row of stream `$n+2` moves its cursor to `$n+1` (when `$n+4`) and counts
 * the rows `w` inserted, if its cursor, as `cursorOf` reads it, is `$n+3` (or `$n+4` is false).
 */
function moveCheckpoint(params: number, cursorOf: (column: string) => string): string {
  const [to, stream, from, move] = [params + 1, params + 2, params + 3, params + 4];
  return `c AS (UPDATE sync_state SET cursor = CASE WHEN $${move}::boolean THEN $${to}::bigint ELSE cursor END, records = records + (SELECT count(*) FROM w WHERE inserted) WHERE stream = $${stream}::text AND (NOT $${move}::boolean OR ${cursorOf('cursor')} IS NOT DISTINCT FROM $${from}::bigint) RETURNING 1)`;
}

/** In the message of the error a withTicket statement fails with when the stream's lease is no longer the worker's. */
export const LEASE_LOST = 'campaign-sync lease lost';

/** In the message of the error a withCheckpoint statement fails with when the checkpoint moved. */
export const CHECKPOINT_CONFLICT = 'campaign-sync checkpoint conflict';

/** True when the checkpoint CTE `c` moved its one row, else an error whose message holds CHECKPOINT_CONFLICT. */
const moved = `CASE WHEN (SELECT count(*) FROM c) = 1 THEN true ELSE ('${CHECKPOINT_CONFLICT} ' || (SELECT count(*) FROM c))::int > 0 END`;

/**
 * A page that is one statement (role results without score details), written while the stream's
 * previous page may still be committing on another connection (page-queue.ts): its rows are written at
 * once, and its checkpoint's compare-and-set waits for the previous page's transaction to end.
 *
 * Each such page holds a transaction-level advisory lock, its ticket: `(hashtext(schema, stream) <<
 * 32) + $n+5`, the page's number in the stream. The statement takes its change number (changes.ts),
 * then its own ticket, writes its rows, then waits for the previous page's ticket (`$n+5 - 1`), which is free once that page
 * committed or rolled back. Only then does it lock the stream's row and read its cursor (FOR UPDATE
 * reads the latest version, committed after this statement began) and move it from `$n+3` to `$n+1`.
 * If the previous page failed, the cursor is not where this page starts: the statement fails with
 * CHECKPOINT_CONFLICT and writes nothing, so a page never commits unless the one before it did. The
 * cursor cannot be checked in the UPDATE itself: its WHERE sees the row as it was when the statement
 * began. Returns one row of counts (`inserted`, `written`), and the page's records another campaign
 * holds (`conflicts`, heldElsewhere: ids `$n+6`, campaign `$n+7`): nothing else is written for such a page.
 * `$n+8` is the page's request id (changes.ts seenCte). The stream's lease (`$n+9`, worker `$n+10`,
 * token `$n+11`) is checked FOR SHARE in the statement (leases.ts fence): when it is no longer the
 * worker's, nothing is written and the statement fails with LEASE_LOST in its message.
 */
export function withTicket(table: 'role_results', params: number): string {
  const [stream, seq] = [params + 2, params + 5];
  const ticket = (back: number) =>
    `((hashtext('campaign-sync page ' || ${MIRROR_SCHEMA} || ' ' || $${stream}::text)::bigint << 32) + $${seq}::bigint - ${back})`;
  const upsert = upsertChanged(table, true, `(SELECT count(*) FROM own) = 1 AND ${FENCED}`);
  // The ticket after the change number (`FROM change`): a page waiting behind an export holds no ticket.
  return `WITH ${CHANGE_CTES}, own AS (SELECT pg_advisory_xact_lock(${ticket(0)}) FROM change),
${fenceCte(params + 9)},
w AS (${upsert}), ${seenCte(params + 8)},
previous AS (SELECT pg_advisory_xact_lock_shared(${ticket(1)}) FROM (SELECT count(*) FROM w) AS written),
latest AS (SELECT cursor FROM sync_state WHERE stream = $${stream}::text AND (SELECT count(*) FROM previous) = 1 AND ${FENCED} FOR UPDATE),
${moveCheckpoint(params, (cursor) => `(SELECT ${cursor} FROM latest)`)}
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*)::int AS written,
${fencedOr(FENCED, moved)} AS moved,
(${heldElsewhere(table, `$${params + 6}`, `$${params + 7}`)}) AS conflicts FROM w`;
}

/**
 * SQL: the records of the ids `$ids` (text[]) that a campaign other than `$campaign` holds, as a JSON
 * array of `[id, campaign]` (a statement's snapshot: what was stored before it wrote anything).
 */
export function heldElsewhere(table: 'session_results' | 'role_results', ids: string, campaign: string): string {
  return `SELECT coalesce(json_agg(json_build_array(t.id, t.campaign_id)), '[]') FROM ${table} t WHERE t.id = ANY(${ids}::text[]) AND t.campaign_id <> ${campaign}::text`;
}

/** A page's number in its stream for withTicket: 1 to 2^31 - 1, then 1 again (the page before is then 0: no wait, at worst a retry). */
export const TICKET_LIMIT = 2 ** 31 - 1;

/** The parameters of withCheckpoint's CTE for a page of stream `stream`. */
export function checkpointParams(stream: string, move: { from: bigint | undefined; to: bigint } | undefined): unknown[] {
  return move === undefined ? [null, stream, null, false] : [move.to, stream, move.from ?? null, true];
}
