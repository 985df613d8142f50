/**
 * `campaigns` against a PostgreSQL team mirror: it upserts the list into the mirror's schema (created
 * when new), never printing the password; a bad --pg-schema is a usage error before the service is
 * asked. Parquet of every table, on every kind, is test/contract/export.test.ts's.
 */
import { expect, it } from 'vitest';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describePg('campaigns with PostgreSQL', () => {
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
