/**
 * The PostgreSQL mirror's run lock: advisory locks per stream, so workers on different
 * campaigns (or keys) write one database together, and a second worker on the same streams exits 75.
 */
import { expect, it } from 'vitest';
import { cli, sim, startCli } from './helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient } from './helpers/pg.js';

describePg('stream locks in PostgreSQL', () => {
  it('a worker on other campaigns runs alongside; a worker on the same streams exits 75 naming the holder', async () => {
    const s = await sim({ campaigns: 2, records: 30 });
    const [a, b] = s.data.campaigns;
    const schema = freshSchema();
    // The URL holds the password: through the environment, not the command line (which is warned about).
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL } };
    const base = ['--pg-schema', schema, '--base-url', s.url];
    // Worker A holds campaign a's stream: watch sleeps for a minute after its first pass.
    const holder = startCli(['watch', ...base, '--campaign', a?.id as string, '--interval', '1m'], env);
    try {
      await holder.waitFor(/pass 1:/);
      const same = await cli(['pull', ...base, '--campaign', a?.id as string], env);
      expect(same.code).toBe(75);
      expect(same.stderr).toMatch(/another campaign-sync is syncing stream .* \(campaign-sync pid \d+ on /);
      expect(same.stderr).not.toContain(new URL(PG_URL).password);
      // From cron, --if-idle: the stream's advisory lock held by a live worker is exit 0 and silence.
      const idle = await cli(['pull', ...base, '--campaign', a?.id as string, '--if-idle', '--quiet'], env);
      expect(idle.code).toBe(0);
      expect(idle.stdout + idle.stderr).toBe('');
      // status names the worker syncing now, and reset of its stream waits for nobody: exit 75.
      const status = JSON.parse((await cli(['status', '--db', PG_URL, '--pg-schema', schema, '--json'])).stdout);
      expect(status.sync_in_progress?.pid).toBe(holder.child.pid);
      expect((await cli(['reset', '--db', PG_URL, '--pg-schema', schema, '--campaign', a?.id as string])).code).toBe(75);
      const other = await cli(['pull', ...base, '--campaign', b?.id as string], env);
      expect(other.stderr).toBe('');
      expect(other.code).toBe(0);
    } finally {
      holder.child.kill('SIGTERM');
      expect((await holder.exited).code).toBe(0);
    }
    // Its lock went with it: the same pull now runs.
    const after = await cli(['pull', ...base, '--campaign', a?.id as string], env);
    expect(after.code).toBe(0);
    const c = await pgClient();
    try {
      const r = await c.query(`SELECT count(*)::int AS n FROM ${schema}.sync_state WHERE last_error IS NULL AND cursor IS NOT NULL`);
      expect(r.rows[0]?.n).toBe(2);
    } finally {
      await c.end();
    }
  });

  it('a worker killed with -9 leaves no stale lock behind', async () => {
    const s = await sim({ campaigns: 1, records: 20 });
    const schema = freshSchema();
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const base = ['--db', PG_URL, '--pg-schema', schema, '--base-url', s.url];
    const holder = startCli(['watch', ...base, '--interval', '1m'], env);
    await holder.waitFor(/pass 1:/);
    holder.child.kill('SIGKILL');
    await holder.exited;
    // The server notices the closed connection at once; allow it a moment on a loaded machine.
    let code: number | null = null;
    for (let i = 0; i < 20 && code !== 0; i++) {
      code = (await cli(['pull', ...base], env)).code;
      if (code !== 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(code).toBe(0);
  });
});
