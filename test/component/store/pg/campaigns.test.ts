/**
 * `export --format parquet` and `campaigns` against a PostgreSQL team mirror: every
 * table's rows read back from the file as the server holds them (int64 exact, DETAILED raw whole,
 * timestamps as UTC microseconds), and `campaigns` upserts the list into the mirror's schema.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { expect, it } from 'vitest';
import { sim, tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

async function readParquet(path: string) {
  const bytes = readFileSync(path);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = (await parquetReadObjects({ file, parsers: { timestampFromMicroseconds: (m: bigint) => m } })) as Array<
    Record<string, unknown>
  >;
  return { rows, schema: parquetMetadata(file).schema };
}

describePg('export --format parquet and campaigns with PostgreSQL', () => {
  it('every table reads back as the server holds it', async () => {
    const s = await sim({ campaigns: 2, records: 30, orderIndexStart: 9_007_199_254_740_990n });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const dir = tempDir();
    for (const [name, table] of [
      ['campaigns', 'campaigns'],
      ['session-results', 'session_results'],
      ['role-results', 'role_results'],
      ['score-details', 'score_details'],
      ['eval-results', 'eval_results'],
    ] as const) {
      const out = join(dir, `${name}.parquet`);
      const r = await runCli(['export', ...db, '--table', name, '--format', 'parquet', '-o', out]);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect((statSync(out).mode & 0o777).toString(8)).toBe('600');
      const { rows, schema: elements } = await readParquet(out);
      const count = await pgRows(schema, `SELECT count(*)::int AS n FROM ${table}`);
      expect(rows.length, name).toBe(count[0]?.n);
      expect(rows.length, name).toBeGreaterThan(0);
      const types = new Map(elements.map((e) => [e.name, e.type]));
      if (table === 'session_results' || table === 'role_results') {
        expect(types.get('order_index')).toBe('INT64');
        expect(types.get('created_at')).toBe('INT64');
        // order_index past 2^53, exact, as the server holds it.
        const byId = new Map((await pgRows(schema, `SELECT id, order_index::text AS o FROM ${table}`)).map((x) => [x.id, x.o]));
        for (const row of rows) expect(String(row.order_index)).toBe(byId.get(row.id));
        expect(rows.some((row) => (row.order_index as bigint) > 2n ** 53n)).toBe(true);
        // Timestamps: UTC microseconds of the stored instant.
        const times = new Map(
          (await pgRows(schema, `SELECT id, (extract(epoch FROM created_at) * 1000000)::bigint::text AS t FROM ${table}`)).map((x) => [
            x.id,
            x.t,
          ]),
        );
        for (const row of rows) expect(String(row.created_at)).toBe(times.get(row.id));
      }
      if (table === 'role_results') {
        expect(types.get('overall_score')).toBe('DOUBLE');
        // DETAILED records are stored once: the file has each whole raw back.
        for (const row of rows)
          expect((JSON.parse(row.raw as string) as { score_details: unknown[] }).score_details.length).toBeGreaterThan(0);
      }
      if (table === 'eval_results') expect(types.get('position')).toBe('INT64');
    }
  });

  it('campaigns stores the list in the PostgreSQL mirror (its schema created when new), never printing the password', async () => {
    const s = await sharedSim({ campaigns: 3, records: 1 });
    const schema = freshSchema();
    const r = await runCli(['campaigns', '--db', PG_URL, '--pg-schema', schema, '--base-url', s.url, '--json'], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(TEST_PG_PASSWORD);
    const stored = await pgRows(schema, 'SELECT id, name FROM campaigns ORDER BY id');
    expect(stored.map((x) => x.id)).toEqual(s.data.campaigns.map((c) => c.id).sort());
    // Again: the same rows, no duplicates; a bad --pg-schema is a usage error before the service is asked.
    expect(
      (
        await runCli(['campaigns', '--db', PG_URL, '--pg-schema', schema, '--base-url', s.url], {
          env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
        })
      ).code,
    ).toBe(0);
    expect((await pgRows(schema, 'SELECT count(*)::int AS n FROM campaigns'))[0]?.n).toBe(3);
    const bad = await runCli(['campaigns', '--db', PG_URL, '--pg-schema', 'Bad-Name', '--base-url', s.url], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--pg-schema');
  });
});
