/**
 * PostgreSQL's schema 18: the times earlier workers wrote as NULL (no zone) or rounded (digits past
 * the microsecond) are repaired from `raw`, as the instant a worker of today writes; others are left
 * alone, and so are the rows' change numbers.
 */
import { expect, it } from 'vitest';
import { PG_MIGRATIONS } from '../../../../src/store/pg/migrations/index.js';
import { migratePg } from '../../../../src/store/pg/schema.js';
import { describePg, freshSchema, pgClient } from '../../../helpers/pg.js';

/** A time as to_char gives it, in UTC to the microsecond. */
const UTC = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ${column}`;

describePg('a PostgreSQL mirror of schema 17 upgraded to 18', () => {
  it('has the times it held as NULL or rounded read again from raw, as UTC cut to the microsecond', async () => {
    const c = await pgClient();
    try {
      const schema = freshSchema();
      await c.query(`CREATE SCHEMA ${schema}`);
      await c.query(`SET search_path TO ${schema}`);
      for (const step of PG_MIGRATIONS.slice(0, 17)) await c.query(step);
      await c.query("INSERT INTO meta (key, value) VALUES ('schema_version', '17')");
      const session = (id: string, created: string, updated: string, evaluated: string) =>
        JSON.stringify({ id, created_at: created, updated_at: updated, order_index: 1, eval_results: [{ evaluated_at: evaluated }] });
      await c.query(
        `INSERT INTO campaigns (id, created_at, raw) VALUES ('c1', NULL, '{"id":"c1","created_at":"2026-03-01T10:00:00"}'),
          ('c2', '2026-03-01T10:00:00Z', '{"id":"c2","created_at":"not a time"}')`,
      );
      // s1: no zone (NULL) and nanoseconds (rounded up); s2: times PostgreSQL read, one not a time at all.
      await c.query(
        `INSERT INTO session_results (id, campaign_id, order_index, created_at, updated_at, raw, change_seq) VALUES
          ('s1', 'c1', 1, NULL, '2026-03-01T10:00:00.1234568Z', $1, 7),
          ('s2', 'c1', 2, '2026-03-01T08:00:00.5+02:00', NULL, $2, 8)`,
        [
          session('s1', '2026-03-01T10:00:00.123456789', '2026-03-01T10:00:00.1234567891Z', '2026-03-01 10:00:00'),
          session('s2', '2026-03-01T08:00:00.5+02:00', 'last Tuesday', '2026-03-01T10:00:00.000Z'),
        ],
      );
      await c.query(
        `INSERT INTO eval_results (parent_type, parent_id, evaluated_at, campaign_id, position) VALUES
          ('session_result', 's1', NULL, 'c1', 0), ('session_result', 's2', '2026-03-01T10:00:00.000Z', 'c1', 0)`,
      );
      await migratePg(c, schema, schema);
      await c.query(`SET search_path TO ${schema}`);
      const times = async (sql: string) => (await c.query(sql)).rows.map((r) => Object.values(r));
      expect(await times(`SELECT id, ${UTC('created_at')} FROM campaigns ORDER BY id`)).toEqual([
        ['c1', '2026-03-01T10:00:00.000000Z'],
        ['c2', '2026-03-01T10:00:00.000000Z'],
      ]);
      expect(await times(`SELECT id, ${UTC('created_at')}, ${UTC('updated_at')}, change_seq FROM session_results ORDER BY id`)).toEqual([
        ['s1', '2026-03-01T10:00:00.123456Z', '2026-03-01T10:00:00.123456Z', '7'],
        ['s2', '2026-03-01T06:00:00.500000Z', null, '8'],
      ]);
      expect(await times(`SELECT parent_id, ${UTC('evaluated_at')} FROM eval_results ORDER BY parent_id`)).toEqual([
        ['s1', '2026-03-01T10:00:00.000000Z'],
        ['s2', '2026-03-01T10:00:00.000000Z'],
      ]);
      // The step's helper is gone.
      expect((await c.query("SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'campaign_sync_time_v18'")).rows[0]?.n).toBe(0);
    } finally {
      await c.end();
    }
  });
});
