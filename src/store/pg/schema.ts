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
import { guardSchema } from './schema-guard.js';

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * The mirror's schema, in SQL: the one schema of the search_path besides pg_catalog, whichever comes
 * first (pg_catalog does on every connection, database.ts; the schema does in a migration, which
 * creates objects in the first). current_schema() would name pg_catalog. The text equals what
 * current_schema() gave before pg_catalog led the path, so lock keys made from it are unchanged.
 */
export const MIRROR_SCHEMA = "(SELECT s FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) s WHERE s <> 'pg_catalog' LIMIT 1)";

/** `name` quoted as an identifier (names are checked by url.ts's checkSchemaName first). */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Creates the schema if needed (CREATE on the database, or a schema created beforehand) and brings
 * it to the current version. `where` names the database in errors (password redacted).
 */
export async function migratePg(client: pg.ClientBase, schema: string, where: string): Promise<void> {
  await client.query('BEGIN');
  try {
    // Workers starting together: one migrates, the others wait and then find it done. Written with
    // their schema: nothing is known yet of who may create functions in `schema` (schema-guard.ts).
    await client.query('SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext($1::pg_catalog.text))', [
      `campaign-sync migrate ${schema}`,
    ]);
    const exists = await client.query('SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name', [
      schema,
    ]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${ident(schema)}`);
    // Again once it exists: another role may have created it since the connection's first check.
    await guardSchema(client, schema, where);
    // The schema first: the migrations create their objects unqualified, in the first schema of the
    // path (pg_catalog would refuse them). Safe as the guard found nobody else's objects there.
    await client.query(`SET LOCAL search_path TO ${ident(schema)}, pg_catalog`);
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
    await repinFunctions(client, schema);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The schemas of a function's `search_path=…` setting, as names. */
function searchPathOf(setting: string): string[] {
  return setting
    .slice('search_path='.length)
    .split(',')
    .map((s) => s.trim())
    .map((s) => (s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s));
}

/**
 * The mirror's functions search what the path was when they were created (`SET search_path FROM
 * CURRENT`): in a migration, the schema before pg_catalog (above); in an older release, the schema
 * alone; after a move (ALTER … SET SCHEMA, ALTER SCHEMA … RENAME: the way out of public), a schema
 * that is no longer the mirror's, where others may create. Each whose setting is not `pg_catalog`,
 * then the schema, is set to that, as every connection's path is.
 */
async function repinFunctions(client: pg.ClientBase, schema: string): Promise<void> {
  const found = await client.query<{ fn: string; setting: string }>(
    `SELECT p.oid::regprocedure::text AS fn, c.setting FROM pg_proc p, unnest(p.proconfig) c(setting)
      WHERE p.pronamespace = $1::regnamespace AND c.setting LIKE 'search_path=%'`,
    [ident(schema)],
  );
  for (const { fn, setting } of found.rows) {
    const path = searchPathOf(setting);
    if (path.length !== 2 || path[0] !== 'pg_catalog' || path[1] !== schema) {
      await client.query(`ALTER FUNCTION ${fn} SET search_path = pg_catalog, ${ident(schema)}`);
    }
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
