/**
 * A PostgreSQL schema that holds no mirror: status and export --since-last name it and create
 * nothing in it; CAMPAIGN_SYNC_DB selects PostgreSQL as --db does; the password is never printed.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describePg('a PostgreSQL schema with no mirror', () => {
  it('status names a schema with no mirror and fails; CAMPAIGN_SYNC_DB selects PostgreSQL as --db does; the password is never printed', async () => {
    const s = await sharedSim({ campaigns: 2, records: 30 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    // No mirror yet: status names the database (password redacted) and fails.
    const none = await runCli(['status', ...db]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no campaign-sync mirror');
    expect((await runCli(['pull', ...db, '--base-url', s.url], env)).code).toBe(0);
    // Its cursors and --check, as every kind's: test/contract/status.test.ts.
    const status = await runCli(['status', ...db, '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).streams).toHaveLength(2);
    // CAMPAIGN_SYNC_DB selects PostgreSQL as --db does.
    const viaEnv = await runCli(['status', '--pg-schema', schema, '--json'], { env: { CAMPAIGN_SYNC_DB: PG_URL } });
    expect(JSON.parse(viaEnv.stdout).streams).toHaveLength(2);
    const table = await runCli(['status', ...db]);
    expect(table.stdout).toContain(s.data.campaigns[0]?.name as string);
    const check = await runCli(['status', ...db, '--check']);
    expect(check.code).toBe(0);
    for (const r of [none, status, table, check]) expect(r.stdout + r.stderr).not.toContain(TEST_PG_PASSWORD);
  });

  it('export --since-last from a schema with no mirror is a usage error, and nothing is created in it', async () => {
    const none = freshSchema();
    const o = ['-o', join(tempDir(), 'x.csv')];
    const r = await runCli(['export', '--db', PG_URL, '--pg-schema', none, '--table', 'session-results', '--since-last', 'w', ...o]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no campaign-sync mirror/);
    expect(await pgRows('public', `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = '${none}'`)).toEqual([{ n: 0 }]);
  });
});
