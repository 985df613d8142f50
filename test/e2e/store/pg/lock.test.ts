/**
 * The PostgreSQL mirror's stream leases as one worker meets them: a stream another worker holds is
 * not fought over (a pull on other campaigns runs alongside, `pull --if-idle` leaves the busy stream
 * to its holder, reset exits 75 naming it), `status` says who syncs what, `status --check` flags a
 * stream whose holder stopped heartbeating, and a worker killed with -9 holds nothing past its lease.
 */
import { expect, it } from 'vitest';
import { cli, sim, startCli } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient, pgRows } from '../../../helpers/pg.js';

/** Waits for `test` to hold (no fixed sleeps: a loaded machine only makes it slower). */
async function until(test: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const started = Date.now();
  while (!(await test())) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const held = async (schema: string) =>
  (await pgRows(schema, 'SELECT count(*)::int AS n FROM leases WHERE worker IS NOT NULL').catch(() => [{ n: 0 }]))[0]?.n as number;

describePg('stream leases in PostgreSQL', () => {
  it('a stream another worker holds: other campaigns sync alongside, --if-idle leaves it, reset exits 75, status names the worker', async () => {
    const s = await sim({ campaigns: 2, records: 60, faults: { slow: 1 }, slowMs: 50 });
    const [a, b] = s.data.campaigns;
    const schema = freshSchema();
    // The URL holds the password: through the environment, not the command line (which is warned about).
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL } };
    const base = ['--pg-schema', schema, '--base-url', s.url, '--page-size', '5'];
    // Worker W holds campaign a's stream, frozen mid-stream: its lease (1 minute) outlasts the checks below.
    const holder = startCli(['pull', ...base, '--campaign', a?.id as string, '--lease', '1m'], env);
    try {
      await until(async () => (await held(schema)) > 0, 'the worker to take its stream');
      holder.child.kill('SIGSTOP');
      const cursorOfA = async () =>
        (await pgRows(schema, `SELECT cursor::text AS c FROM sync_state WHERE campaign_id = '${a?.id}'`))[0]?.c ?? null;
      const before = await cursorOfA();
      // From cron, --if-idle: the stream a live worker holds is left to it: exit 0 and silence.
      const idle = await cli(['pull', ...base, '--campaign', a?.id as string, '--if-idle', '--quiet'], env);
      expect(idle.code, idle.stderr).toBe(0);
      expect(idle.stdout + idle.stderr).toBe('');
      expect(await cursorOfA()).toBe(before);
      // status names the worker syncing now, per stream and per worker.
      const status = JSON.parse((await cli(['status', '--db', PG_URL, '--pg-schema', schema, '--json'])).stdout);
      expect(status.sync_in_progress?.pid).toBe(holder.child.pid);
      const stream = status.streams.find((r: { campaign_id: string }) => r.campaign_id === a?.id);
      expect(stream.worker).toMatchObject({ pid: holder.child.pid, stalled: false });
      expect(status.fleet.workers).toEqual([expect.objectContaining({ pid: holder.child.pid, alive: true, streams: [stream.stream] })]);
      const reset = await cli(['reset', '--db', PG_URL, '--pg-schema', schema, '--campaign', a?.id as string]);
      expect(reset.code).toBe(75);
      expect(reset.stderr).toMatch(/another campaign-sync is syncing stream /);
      expect(reset.stderr).not.toContain(new URL(PG_URL).password);
      const other = await cli(['pull', ...base, '--campaign', b?.id as string], env);
      expect(other.stderr).toBe('');
      expect(other.code).toBe(0);
      // A second worker on the same stream waits for it (no exit 75), and syncs what is left once it is free.
      const same = startCli(['pull', ...base, '--campaign', a?.id as string], env);
      holder.child.kill('SIGCONT');
      expect((await holder.exited).code, holder.stderr()).toBe(0);
      const second = await same.exited;
      expect(second.code, same.stderr()).toBe(0);
    } finally {
      holder.child.kill('SIGCONT');
      holder.child.kill('SIGKILL');
    }
    // Every lease given back: reset runs.
    expect((await cli(['reset', '--db', PG_URL, '--pg-schema', schema, '--campaign', a?.id as string])).code).toBe(0);
  });

  it('status --check flags a stream whose worker stopped heartbeating and nobody took over', async () => {
    const s = await sim({ campaigns: 1, records: 60, faults: { slow: 1 }, slowMs: 50 });
    const schema = freshSchema();
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL } };
    const base = ['pull', '--pg-schema', schema, '--base-url', s.url, '--page-size', '5', '--lease', '1s'];
    // Synced once, so the stream itself is healthy; then a full re-read that freezes mid-way.
    expect((await cli(base, env)).code).toBe(0);
    const holder = startCli([...base, '--full'], env);
    try {
      await until(async () => (await held(schema)) > 0, 'the worker to take its stream');
      holder.child.kill('SIGSTOP');
      const check = () => cli(['status', '--db', PG_URL, '--pg-schema', schema, '--check', '--max-age', '1h']);
      let r = await check();
      await until(async () => {
        r = await check();
        return /stopped heartbeating/.test(r.stdout);
      }, 'status --check to flag the stream');
      expect(r.code).toBe(4);
      expect(r.stdout).toMatch(
        new RegExp(
          `^stream .*: its worker \\(.*, pid ${holder.child.pid}\\) stopped heartbeating .* no other worker has taken the stream over`,
          'm',
        ),
      );
      const doc = JSON.parse((await cli(['status', '--db', PG_URL, '--pg-schema', schema, '--check', '--max-age', '1h', '--json'])).stdout);
      expect(doc.stalled_leases).toEqual([expect.objectContaining({ pid: holder.child.pid })]);
    } finally {
      holder.child.kill('SIGKILL');
    }
  });

  it('a worker killed with -9 holds its streams no longer than its lease', async () => {
    const s = await sim({ campaigns: 1, records: 20 });
    const schema = freshSchema();
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const base = ['--db', PG_URL, '--pg-schema', schema, '--base-url', s.url, '--lease', '2s'];
    const holder = startCli(['watch', ...base, '--interval', '1m'], env);
    await holder.waitFor(/pass 1:/);
    holder.child.kill('SIGKILL');
    await holder.exited;
    const after = await cli(['pull', ...base], env);
    expect(after.code, after.stderr).toBe(0);
    const c = await pgClient();
    try {
      const r = await c.query(`SELECT count(*)::int AS n FROM ${schema}.sync_state WHERE last_error IS NULL AND cursor IS NOT NULL`);
      expect(r.rows[0]?.n).toBe(1);
    } finally {
      await c.end();
    }
  });
});
