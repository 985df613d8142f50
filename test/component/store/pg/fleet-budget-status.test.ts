/**
 * `status` of a PostgreSQL mirror tells the request budget against its limit: the slots busy of the
 * count the key is held to (the stricter `--rate-limit` of the processes keeping to it), not of the
 * slots' rows made so far, which read as a budget spent.
 */
import { expect, it } from 'vitest';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describePg("status's budget line on PostgreSQL", () => {
  it('counts the busy slots of the limit the key is held to', async () => {
    const s = await sharedSim({ campaigns: 2, records: 30 });
    const db = ['--db', PG_URL, '--pg-schema', freshSchema()];
    const pulled = await runCli(['pull', ...db, '--base-url', s.url, '--rate-limit', '40/60s'], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(pulled.code, pulled.stderr).toBe(0);
    const status = await runCli(['status', ...db]);
    expect(status.code, status.stderr).toBe(0);
    // A few requests of a window of 60 s: busy still, of the 40 the key is held to.
    expect(status.stdout).toMatch(/budget: [1-9]\d* of 40 request slots busy/);
  });
});
