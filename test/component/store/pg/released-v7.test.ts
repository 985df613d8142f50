/**
 * A PostgreSQL mirror whose audit trail version 7 made, as released or as the builds that ran it
 * edited in place before version 12 (test/helpers/first-versions.ts), upgrades to the schema a new
 * mirror gets. The catalogs are compared: tables, views, indexes and sequences with their options,
 * columns with their types, defaults and order, constraints, functions and triggers.
 */
import type pg from 'pg';
import { expect, it } from 'vitest';
import { PG_MIGRATIONS } from '../../../../src/store/pg/migrations/index.js';
import { migratePg, PG_SCHEMA_VERSION } from '../../../../src/store/pg/schema.js';
import { PG_EDITED_V7 } from '../../../helpers/first-versions.js';
import { describePg, freshSchema, pgClient } from '../../../helpers/pg.js';

/** What the catalog holds of a schema, its name written `<schema>` (functions and definitions name it). */
const CATALOG: Record<string, string> = {
  relations: `SELECT c.relname, c.relkind, c.reloptions FROM pg_class c WHERE c.relnamespace = $1::regnamespace ORDER BY 1`,
  columns: `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
      pg_get_expr(d.adbin, d.adrelid) AS default_value, row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, position`,
  constraints: `SELECT conrelid::regclass::text AS relation, conname, pg_get_constraintdef(oid) AS definition
    FROM pg_constraint WHERE connamespace = $1::regnamespace ORDER BY 1, 2`,
  indexes: 'SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1, 2',
  views: `SELECT c.relname, pg_get_viewdef(c.oid) AS definition FROM pg_class c
    WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('v', 'm') ORDER BY 1`,
  sequences: `SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size
    FROM pg_sequences WHERE schemaname = $1 ORDER BY 1`,
  functions: `SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p WHERE p.pronamespace = $1::regnamespace ORDER BY 1, 2`,
  triggers: `SELECT t.tgrelid::regclass::text AS relation, t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) AS definition
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal ORDER BY 1, 2`,
};

async function catalogOf(c: pg.Client, schema: string): Promise<Record<string, unknown[]>> {
  // Every name qualified, the same way for every schema compared.
  await c.query('SET search_path TO pg_catalog');
  const out: Record<string, unknown[]> = {};
  for (const [part, sql] of Object.entries(CATALOG)) {
    const rows = (await c.query(sql, [schema])).rows;
    out[part] = JSON.parse(JSON.stringify(rows).replaceAll(schema, '<schema>'));
  }
  return out;
}

/** A new schema taken through `steps` as a build of the past would have, its version recorded. */
async function madeBy(c: pg.Client, steps: readonly string[]): Promise<string> {
  const schema = freshSchema();
  await c.query(`CREATE SCHEMA ${schema}`);
  await c.query(`SET search_path TO ${schema}`);
  for (const step of steps) await c.query(step);
  await c.query("INSERT INTO meta (key, value) VALUES ('schema_version', $1)", [String(steps.length)]);
  return schema;
}

async function upgrade(c: pg.Client, schema: string): Promise<void> {
  await migratePg(c, schema, schema);
  const version = await c.query(`SELECT value FROM ${schema}.meta WHERE key = 'schema_version'`);
  expect(version.rows[0]?.value).toBe(String(PG_SCHEMA_VERSION));
}

describePg('a PostgreSQL schema upgraded from version 7', () => {
  it('ends with the catalog of a new one, whether version 7 ran as released or as edited in place', async () => {
    const c = await pgClient();
    try {
      const fresh = freshSchema();
      await upgrade(c, fresh);
      const expected = await catalogOf(c, fresh);
      expect(expected.functions?.length).toBeGreaterThan(0);
      expect(expected.triggers?.length).toBeGreaterThan(0);

      const released = PG_MIGRATIONS.slice(0, 7);
      const edited = [...PG_MIGRATIONS.slice(0, 6), PG_EDITED_V7];
      const at7 = { released: await madeBy(c, released), edited: await madeBy(c, edited) };
      // The comparison sees what the edit changed: the two differ before the upgrade.
      expect(await catalogOf(c, at7.released)).not.toEqual(await catalogOf(c, at7.edited));
      // The builds that ran the edited step went on to 11 before version 12 existed.
      const edited11 = await madeBy(c, [...edited, ...PG_MIGRATIONS.slice(7, 11)]);

      for (const [name, schema] of Object.entries({ ...at7, 'edited, at 11': edited11 })) {
        await upgrade(c, schema);
        expect(await catalogOf(c, schema), name).toEqual(expected);
      }
    } finally {
      await c.end();
    }
  });
});
