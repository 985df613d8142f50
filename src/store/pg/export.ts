/**
 * Reading a table of the PostgreSQL mirror for `export`: the rows as the SQLite mirror's
 * export gives them (JSON columns as JSON text, int64 as bigint, times in the normal form of
 * store/model/times.ts), streamed from a server-side cursor in batches so memory stays flat. Days
 * compare in UTC for timestamptz columns, on the text as written for the others (score details'
 * times, which carry no zone: UTC too).
 */
import type pg from 'pg';
import { INTERNAL_COLUMNS, isTimeColumn } from '../model/export-tables.js';
import { normalTime } from '../model/times.js';
import type { PgDatabase } from './database.js';

export interface PgExportQuery {
  table: string;
  campaignColumn: string;
  dateColumn: string;
  campaign?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

const BATCH = 5000;

/** An identifier, quoted: a column an analyst added may have any name. */
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A timestamptz as UTC text to the microsecond (the driver's Date would cut it to the millisecond). */
const utcText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The SELECT of a table's export (alias `t`) without its conditions, and how its rows are made ready. */
export interface PgSelect {
  columns: string[];
  types: string[];
  /** `SELECT … FROM … t`: DETAILED records are stored once (compact.ts), their full raw comes from the _full views. */
  sql: string;
  /** Every column's type, the chosen or not (the mirror's bookkeeping left out). */
  all: Map<string, string>;
  /** A fetched row as the SQLite export gives it: bigints exact, times in their normal form. */
  convert: (row: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * The columns of a table or view and their PostgreSQL types (the mirror's own bookkeeping, such as
 * change numbers, left out), and the SELECT of those `choose` picks, in its order.
 */
export async function pgSelect(
  db: PgDatabase,
  table: string,
  choose: (available: string[]) => string[] = (available) => available,
  extra?: { column: string; type: string; sql: string },
): Promise<PgSelect> {
  const found = await db.query<{ name: string; type: string }>(
    'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
    [db.schema, table],
  );
  const present = found.rows.filter((c) => !INTERNAL_COLUMNS.has(c.name));
  const all = new Map(present.map((c) => [c.name, c.type]));
  const chosen = choose(present.map((c) => c.name));
  const cols = chosen.map((name) => ({ name, type: all.get(name) as string }));
  const types = new Map(cols.map((c) => [c.name, c.type]));
  const select = cols
    .map((c) =>
      c.type === 'jsonb' || c.type === 'bigint'
        ? `t.${ident(c.name)}::text AS ${ident(c.name)}`
        : c.type === 'timestamp with time zone'
          ? `${utcText(`t.${ident(c.name)}`)} AS ${ident(c.name)}`
          : `t.${ident(c.name)}`,
    )
    .join(', ');
  // Times in their normal form, whatever PostgreSQL keeps them as (score details' are the text served).
  const times = new Set(cols.filter((c) => isTimeColumn(c.name, c.type)).map((c) => c.name));
  const from = table === 'role_results' || table === 'score_details' ? `${table}_full` : table;
  // A feed's own column (export --since-last), after the chosen ones.
  const more = extra === undefined ? '' : `, ${extra.sql}`;
  const convert = (row: Record<string, unknown>) => {
    for (const [name, type] of types) {
      const v = row[name];
      if (v === null || v === undefined) continue;
      if (type === 'bigint') row[name] = BigInt(v as string);
      else if (times.has(name)) row[name] = normalTime(v instanceof Date ? v.toISOString() : v);
      else if (v instanceof Date) row[name] = v.toISOString();
    }
    return row;
  };
  const columns = [...cols.map((c) => c.name), ...(extra === undefined ? [] : [extra.column])];
  const typesOf = [...cols.map((c) => c.type), ...(extra === undefined ? [] : [extra.type])];
  return { columns, types: typesOf, sql: `SELECT ${select}${more} FROM ${from} t`, all, convert };
}

/** The rows of `sql` through a cursor `name`, a batch at a time, on `client` inside its transaction. */
export async function* cursorRows<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  name: string,
  sql: string,
  params: unknown[],
): AsyncGenerator<R> {
  await client.query(`DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`, params);
  for (;;) {
    const batch = await client.query<R>(`FETCH ${BATCH} FROM ${name}`);
    yield* batch.rows;
    if (batch.rows.length < BATCH) break;
  }
  await client.query(`CLOSE ${name}`);
}

/**
 * The rows of `sql` through a cursor, in a read-only transaction on a connection of its own, taken on
 * the first row asked for (an export that fails before reading holds none). A reader that stops early
 * (`| head`) leaves the transaction open: the connection is then dropped, not returned to the pool.
 */
export async function* readOnlyRows<R extends pg.QueryResultRow>(
  db: PgDatabase,
  name: string,
  sql: string,
  params: unknown[],
): AsyncGenerator<R> {
  const { client } = await db.opened('BEGIN READ ONLY', 'cannot read');
  let clean = false;
  try {
    yield* cursorRows<R>(client, name, sql, params);
    await client.query('COMMIT');
    clean = true;
  } catch (err) {
    throw db.failure(err, 'cannot read');
  } finally {
    client.release(!clean);
  }
}

/**
 * Opens the export of a table or view: its columns and their PostgreSQL types, and its rows in order
 * (keyed tables by id). `choose` picks the columns written, in their order, from the ones it has.
 */
export async function pgExportRows(
  db: PgDatabase,
  q: PgExportQuery,
  choose: (available: string[]) => string[] = (available) => available,
): Promise<{ columns: string[]; types: string[]; rows: AsyncGenerator<Record<string, unknown>> }> {
  const s = await pgSelect(db, q.table, choose);
  // The filters' columns are typed from every column; the rows carry the chosen ones.
  const dateType = s.all.get(q.dateColumn);
  const where: string[] = [];
  const params: string[] = [];
  const day = dateType?.startsWith('timestamp') ? `(t.${q.dateColumn} AT TIME ZONE 'UTC')::date::text` : `substr(t.${q.dateColumn}, 1, 10)`;
  if (q.campaign !== undefined) where.push(`t.${q.campaignColumn} = $${params.push(q.campaign)}`);
  if (q.since !== undefined) where.push(`${day} >= $${params.push(q.since)}`);
  if (q.until !== undefined) where.push(`${day} <= $${params.push(q.until)}`);
  const order = s.all.has('id') ? ' ORDER BY t.id' : '';
  const sql = `${s.sql}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}${order}`;
  async function* rows(): AsyncGenerator<Record<string, unknown>> {
    for await (const row of readOnlyRows<Record<string, unknown>>(db, 'export_rows', sql, params)) yield s.convert(row);
  }
  return { columns: s.columns, types: s.types, rows: rows() };
}
