/**
 * The team mirror's schema in PostgreSQL: the tables, columns, indexes and views of the SQLite
 * mirror (store/sqlite/schema.ts, store/sqlite/migrations/) with PostgreSQL types: bigint order_index and
 * cursors, jsonb for raw, feedback and additional_scores, timestamptz for the service's date-times
 * (which carry a zone), text for score details' times (which may not). `meta.schema_version` holds
 * the version; PG_MIGRATIONS[i] (store/pg/migrations/) moves it from i to i + 1, in one transaction under an advisory lock so
 * workers starting together migrate once.
 *
 * Left out: the NDJSON bookkeeping tables (a PostgreSQL mirror is its own destination) and the
 * declared foreign keys (PostgreSQL would enforce them, and a result may arrive before its campaign).
 */
import type pg from 'pg';
import { UsageError } from '../../errors.js';
import { PG_MIGRATIONS } from './migrations/index.js';

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/** `name` quoted as an identifier (names are checked by url.ts's checkSchemaName first). */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates the schema if needed (CREATE on the database, or a schema created beforehand) and brings
 * it to the current version. `where` names the database in errors (password redacted).
 */
export async function migratePg(client: pg.ClientBase, schema: string, where: string): Promise<void> {
  await client.query('BEGIN');
  try {
    // Workers starting together: one migrates, the others wait and then find it done.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`campaign-sync migrate ${schema}`]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${ident(schema)}`);
    await client.query(`SET LOCAL search_path TO ${ident(schema)}`);
    const version = await currentVersion(client, schema, where);
    if (version > PG_SCHEMA_VERSION) {
      throw new UsageError(
        `${where} was written by a newer campaign-sync (schema ${version}, this one knows ${PG_SCHEMA_VERSION}); upgrade`,
      );
    }
    for (let v = version; v < PG_SCHEMA_VERSION; v++) {
      await client.query(PG_MIGRATIONS[v] as string);
      await client.query(
        "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [String(v + 1)],
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The stored version; 0 for an empty schema; a schema with tables of someone else's is a usage error. */
async function currentVersion(client: pg.ClientBase, schema: string, where: string): Promise<number> {
  const tables = await client.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [
    schema,
  ]);
  if (tables.rowCount === 0) return 0;
  if (!tables.rows.some((t) => t.table_name === 'meta')) {
    throw new UsageError(`${where} already holds tables that are not campaign-sync's; pick another --pg-schema`);
  }
  const v = await client.query<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'");
  return Number(v.rows[0]?.value ?? 0);
}
