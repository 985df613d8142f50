/**
 * Reading a table of the PostgreSQL mirror for `export`: the rows as the SQLite mirror's
 * export gives them (JSON columns as JSON text, int64 as bigint, times as ISO text), streamed from a
 * server-side cursor in batches so memory stays flat. Days compare in UTC for timestamptz columns,
 * on the text as written for the others (score details' times).
 */
import type pg from 'pg';
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

/**
 * Opens the export of a table or view: its columns and their PostgreSQL types, and its rows in order
 * (keyed tables by id). `choose` picks the columns written, in their order, from the ones it has.
 */
export async function pgExportRows(
  db: PgDatabase,
  q: PgExportQuery,
  choose: (available: string[]) => string[] = (available) => available,
): Promise<{ columns: string[]; types: string[]; rows: AsyncGenerator<Record<string, unknown>> }> {
  const found = await db.query<{ name: string; type: string }>(
    'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
    [db.schema, q.table],
  );
  const all = new Map(found.rows.map((c) => [c.name, c.type]));
  // The filters' columns are typed from every column; the rows carry the chosen ones.
  const dateType = all.get(q.dateColumn);
  const chosen = choose(found.rows.map((c) => c.name));
  const cols = chosen.map((name) => ({ name, type: all.get(name) as string }));
  const types = new Map(cols.map((c) => [c.name, c.type]));
  const select = cols
    .map((c) => (c.type === 'jsonb' || c.type === 'bigint' ? `${ident(c.name)}::text AS ${ident(c.name)}` : ident(c.name)))
    .join(', ');
  const where: string[] = [];
  const params: string[] = [];
  const day = dateType?.startsWith('timestamp') ? `(${q.dateColumn} AT TIME ZONE 'UTC')::date::text` : `substr(${q.dateColumn}, 1, 10)`;
  if (q.campaign !== undefined) where.push(`${q.campaignColumn} = $${params.push(q.campaign)}`);
  if (q.since !== undefined) where.push(`${day} >= $${params.push(q.since)}`);
  if (q.until !== undefined) where.push(`${day} <= $${params.push(q.until)}`);
  const order = all.has('id') ? ' ORDER BY id' : '';
  // DETAILED records are stored once (compact.ts): their full raw comes from the _full views.
  const from = q.table === 'role_results' || q.table === 'score_details' ? `${q.table}_full` : q.table;
  const sql = `SELECT ${select} FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}${order}`;
  const convert = (row: Record<string, unknown>) => {
    for (const [name, type] of types) {
      const v = row[name];
      if (v === null || v === undefined) continue;
      if (type === 'bigint') row[name] = BigInt(v as string);
      else if (v instanceof Date) row[name] = v.toISOString();
    }
    return row;
  };
  async function* rows(): AsyncGenerator<Record<string, unknown>> {
    // Connected on the first row asked for: an export that fails before reading holds no connection.
    let client: pg.PoolClient;
    try {
      client = await db.pool.connect();
    } catch (err) {
      throw db.failure(err, 'cannot read');
    }
    let clean = false;
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(`DECLARE export_rows NO SCROLL CURSOR FOR ${sql}`, params);
      for (;;) {
        const batch = await client.query(`FETCH ${BATCH} FROM export_rows`);
        for (const row of batch.rows) yield convert(row);
        if (batch.rows.length < BATCH) break;
      }
      await client.query('COMMIT');
      clean = true;
    } catch (err) {
      throw db.failure(err, 'cannot read');
    } finally {
      // A reader that stopped early (`| head`) leaves the transaction open: the connection is dropped.
      client.release(!clean);
    }
  }
  return { columns: cols.map((c) => c.name), types: cols.map((c) => c.type), rows: rows() };
}
