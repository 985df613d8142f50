/**
 * DETAILED records stored once in PostgreSQL (store/pg/compact.ts): every shape comes back through
 * role_results_full and export as the same jsonb value as sent, only what can be rebuilt is taken
 * out, and a record read again is rewritten only when its content changed, details included.
 */
import { expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import type { CheckedRecord } from '../../../../src/core/types.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { pgExportRows } from '../../../../src/store/pg/export.js';
import { PG_SCHEMA_VERSION } from '../../../../src/store/pg/schema.js';
import { upsertRoles } from '../../../../src/store/pg/upserts.js';
import type { UpsertCounts } from '../../../../src/store/sqlite/upserts.js';
import { servedRecords } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { checked, evalOf as specEval } from '../../../helpers/records.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

// A time with milliseconds: an eval result is split out only when its `evaluated_at` reads back from
// timestamptz as written.
const evalOf = (n: number, over: Record<string, unknown> = {}) => specEval(n, { evaluated_at: '2026-01-02T03:04:05.678Z', ...over });

const detailOf = (id: string, evals: unknown[] | null, over: Record<string, unknown> = {}) => ({
  id,
  user: { email: 'a@example.org', id: 'u1' },
  scenario: { id: 's1', name: 'Billing', type: { key: 'EMAIL', label: 'Email' } },
  score: 3.25,
  eval_results: evals,
  created_at: '2026-01-01T00:00:00.000',
  ...over,
});

const roleOf = (id: string, details: unknown, over: Record<string, unknown> = {}) =>
  checked(
    JSON.stringify({
      id,
      user: { id: 'u1', email: 'a@example.org' },
      overall_score: 4.1,
      score_details: details,
      additional_scores: { cefr: { score: 'B2' }, nested: { score_details: [] } },
      order_index: 1,
      ...over,
    }),
  );

async function withDb<T>(fn: (db: PgDatabase) => Promise<T>, schema = freshSchema()): Promise<T> {
  const db = await PgDatabase.open(PG_URL, schema);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** One page in one transaction, as the sink writes it (the stream's sync_state row counts new records). */
const write = (db: PgDatabase, records: CheckedRecord[]): Promise<UpsertCounts> =>
  db.transaction(async (client) => {
    await client.query("INSERT INTO sync_state (stream, campaign_id, endpoint) VALUES ('t', 'c1', 'role') ON CONFLICT DO NOTHING");
    return upsertRoles(client, records, 'c1', 'DETAILED', { stream: 't', move: undefined });
  });

/** The ids whose rebuilt raw is not the same jsonb value as the record's text. */
async function differing(db: PgDatabase, records: CheckedRecord[]): Promise<string[]> {
  const r = await db.query<{ id: string }>(
    'SELECT x.id FROM unnest($1::text[], $2::text[]) x(id, raw) LEFT JOIN role_results_full f ON f.id = x.id WHERE f.raw IS DISTINCT FROM x.raw::jsonb',
    [records.map((x) => x.id), records.map((x) => x.raw)],
  );
  return r.rows.map((row) => row.id);
}

/** The `score_details` stored in a role result's raw, as text. */
const stored = async (db: PgDatabase, id: string) =>
  (await db.query<{ raw: string }>("SELECT (raw -> 'score_details')::text AS raw FROM role_results WHERE id = $1", [id])).rows[0]?.raw ??
  '';

describePg('DETAILED records stored once in PostgreSQL', () => {
  it('every shape comes back as sent; only what can be rebuilt is taken out', async () => {
    await withDb(async (db) => {
      const records = [
        roleOf('plain', [detailOf('d1', [evalOf(1), evalOf(2)]), detailOf('d2', [evalOf(3)])]),
        roleOf('quoted', [
          detailOf('d3', [evalOf(4, { rationale: 'tab \t line\u2028sep "q" \\ 😀 é', skill: { key: 'K', label: null } })]),
        ]),
        // Each keeps its eval results in its detail's raw.
        roleOf('oddEvals', [
          detailOf('d4', [evalOf(5, { extra: true })]),
          detailOf('d5', [evalOf(6, { score: 6.5 })]),
          detailOf('d6', [evalOf(7, { evaluated_at: '2026-01-02T03:04:05Z' })]),
          detailOf('d7', [evalOf(8, { evaluated_at: '2026-01-02T03:04:05.678+01:00' })]),
          detailOf('d8', [evalOf(9), 'not an object']),
          detailOf('d9', []),
          detailOf('d10', null),
        ]),
        // These keep their whole score details in the record's raw.
        roleOf('noId', [detailOf('d11', [evalOf(10)]), { score: 1 }]),
        roleOf('dupId', [detailOf('d12', [evalOf(11)]), detailOf('d12', [evalOf(12)])]),
        roleOf('sharesD1', [detailOf('d1', [evalOf(13)])]),
        roleOf('empty', []),
        roleOf('notArray', { id: 'x' }),
        checked(
          toJson(roleOf('bigInts', [detailOf('d13', [evalOf(14)], { score: 1e21 })], { order_index: '@' }).record).replace(
            '"@"',
            '12345678901234567890123',
          ),
        ),
      ];
      expect(await write(db, records)).toEqual({ inserted: records.length, updated: 0 });
      expect(await differing(db, records)).toEqual([]);
      expect(await stored(db, 'plain')).toBe('[]');
      expect(await stored(db, 'sharesD1')).toContain('d1');
      for (const id of ['noId', 'dupId', 'notArray']) expect(await stored(db, id)).not.toBe('[]');
      const detail = async (id: string) =>
        (await db.query<{ raw: string }>('SELECT raw::text AS raw FROM score_details WHERE id = $1', [id])).rows[0]?.raw;
      expect(await detail('d1')).toContain('"eval_results": []');
      for (const id of ['d4', 'd5', 'd6', 'd7', 'd8']) expect(await detail(id)).toContain('"evaluation_id"');
      expect((await db.query("SELECT 1 FROM score_details WHERE id = 'd1' AND role_result_id = 'plain'")).rowCount).toBe(1);
      // export gives the full raw back, from the same views.
      const out = await pgExportRows(db, { table: 'role_results', campaignColumn: 'campaign_id', dateColumn: 'created_at' });
      const exported = new Map<string, string>();
      for await (const row of out.rows) exported.set(row.id as string, row.raw as string);
      expect(exported.size).toBe(records.length);
      const same = await db.query<{ id: string }>(
        'SELECT id FROM unnest($1::text[], $2::text[], $3::text[]) x(id, a, b) WHERE a::jsonb IS DISTINCT FROM b::jsonb',
        [records.map((r) => r.id), records.map((r) => exported.get(r.id)), records.map((r) => r.raw)],
      );
      expect(same.rows).toEqual([]);
    });
  });

  it('a record read again is rewritten only when it changed, also when only a detail changed', async () => {
    await withDb(async (db) => {
      const first = [roleOf('a', [detailOf('d1', [evalOf(1), evalOf(2)])]), roleOf('b', [detailOf('d2', [evalOf(3)])])];
      expect(await write(db, first)).toEqual({ inserted: 2, updated: 0 });
      expect(await write(db, first)).toEqual({ inserted: 0, updated: 0 });
      // Only an eval result inside a detail differs: the stripped raw is the same.
      const next = [roleOf('a', [detailOf('d1', [evalOf(1), evalOf(2, { rationale: 'rescored' })])]), first[1] as CheckedRecord];
      expect(await write(db, next)).toEqual({ inserted: 0, updated: 1 });
      expect(await differing(db, next)).toEqual([]);
      const evals = await db.query("SELECT count(*)::int AS n FROM eval_results WHERE parent_id IN ('d1', 'd2')");
      expect(evals.rows[0]?.n).toBe(3);
      // A detail id another result already holds stays with it; this record keeps its whole raw.
      const thief = [roleOf('c', [detailOf('d2', [evalOf(4)])])];
      expect(await write(db, thief)).toEqual({ inserted: 1, updated: 0 });
      expect(await differing(db, [...next, ...thief])).toEqual([]);
      expect(await stored(db, 'c')).toContain('d2');
    });
  });

  // A pull from the simulator, stored once and rebuilt as served, on every kind: test/contract/compact.test.ts.

  it('migrates a schema-1 mirror: stored DETAILED records compacted in place, every raw the same, a re-read changes nothing', async () => {
    const s = await sharedSim({ campaigns: 2, records: 40 });
    const schema = freshSchema();
    const args = ['pull', '--db', PG_URL, '--pg-schema', schema, '--base-url', s.url, '--page-size', '25', '--json'];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    expect((await runCli(args, env)).code).toBe(0);
    const served = servedRecords(s, 40);
    await withDb(async (db) => {
      // Back to what schema 1 stored: every raw whole, the _full views the tables themselves.
      await db.query('UPDATE score_details d SET raw = f.raw FROM score_details_full f WHERE f.id = d.id');
      await db.query('UPDATE role_results r SET raw = f.raw FROM role_results_full f WHERE f.id = r.id');
      // Nor had it schema 6's change numbers, which the view's `*` would take.
      // Nor schema 7's versions, which read it (the upgrade makes them again).
      await db.query('DROP VIEW result_versions CASCADE');
      await db.query('DROP TRIGGER role_results_version ON role_results');
      await db.query('ALTER TABLE role_results DROP COLUMN change_seq');
      await db.query(`CREATE OR REPLACE VIEW ${schema}.role_results_full AS SELECT * FROM ${schema}.role_results`);
      await db.query("UPDATE meta SET value = '1' WHERE key = 'schema_version'");
      expect((await db.query("SELECT id FROM role_results WHERE raw -> 'score_details' = '[]'::jsonb")).rowCount).toBe(0);
    }, schema);
    // Opening it migrates.
    await withDb(async (db) => {
      expect((await db.query("SELECT value FROM meta WHERE key = 'schema_version'")).rows[0]?.value).toBe(String(PG_SCHEMA_VERSION));
      const roles = await db.query<{ id: string }>('SELECT id FROM role_results');
      expect(roles.rowCount).toBeGreaterThan(0);
      expect(
        await differing(
          db,
          roles.rows.map((row) => checked(served.get(row.id) as string)),
        ),
      ).toEqual([]);
      const stripped = await db.query("SELECT id FROM role_results WHERE raw -> 'score_details' = '[]'::jsonb");
      expect(stripped.rowCount).toBe(roles.rowCount);
      const whole = await db.query("SELECT id FROM score_details WHERE raw -> 'eval_results' <> '[]'::jsonb");
      expect(whole.rows).toEqual([]);
    }, schema);
    // A full re-read finds every record as stored: nothing counted as changed.
    const again = await runCli([...args, '--full'], env);
    expect(again.code, again.stderr).toBe(0);
    const doc = JSON.parse(again.stdout) as { streams: Array<{ new: number; updated: number }> };
    expect(doc.streams.every((x) => x.new === 0 && x.updated === 0)).toBe(true);
  });
});
