/**
 * A fleet of workers on one PostgreSQL mirror: three pulls with state folders and homes of their own
 * (three "hosts") against one simulator. Streams are leased, never synced by two workers at once
 * (the simulator's `streamOverlaps`), a busy stream is waited for rather than exit 75, a dead or frozen
 * worker's streams are taken over after its lease, a woken worker commits nothing for them (an audit
 * trigger records which process moved each checkpoint), and a worker whose clock is 10 minutes off
 * steals nothing: lease times are the server's.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { cli, type RunningCli, sim, startCli, tempDir } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';

const RECORDS = 120;
const CLOCK_OFFSET = pathToFileURL(fileURLToPath(new URL('../../../helpers/clock-offset.mjs', import.meta.url))).href;

/** A worker on a "host" of its own: its own home and state folder, the URL through the environment. */
function hostEnv(s: RunningSimulator, extra: Record<string, string> = {}) {
  const home = tempDir();
  return { env: { HOME: home, XDG_STATE_HOME: `${home}/state`, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL, ...extra } };
}

function pullArgs(s: RunningSimulator, schema: string, more: string[] = []): string[] {
  return ['pull', '--pg-schema', schema, '--base-url', s.url, '--page-size', '10', '--rate-limit', '100000/1m', '--lease', '2s', ...more];
}

/** Waits for `test` to hold (no fixed sleeps: a loaded machine only makes it slower). */
async function until(test: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const started = Date.now();
  while (!(await test())) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The schema made (migrated by a campaigns listing) with a trigger recording which process moves each checkpoint. */
async function prepare(s: RunningSimulator, schema: string): Promise<void> {
  const made = await cli(['campaigns', '--pg-schema', schema, '--base-url', s.url, '--quiet'], hostEnv(s));
  expect(made.code, made.stderr).toBe(0);
  await pgRows(
    schema,
    `CREATE TABLE audit (n bigserial, stream text, app text, cursor bigint);
     CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
       IF NEW.cursor IS DISTINCT FROM OLD.cursor THEN
         INSERT INTO audit (stream, app, cursor) VALUES (NEW.stream, current_setting('application_name'), NEW.cursor);
       END IF; RETURN NEW; END $$;
     CREATE TRIGGER audit AFTER UPDATE ON sync_state FOR EACH ROW EXECUTE FUNCTION audit();`,
  );
}

/** Every record served is in the mirror once, in its campaign, and every checkpoint is at its stream's end. */
async function expectExact(s: RunningSimulator, schema: string): Promise<void> {
  const want = new Map<string, { campaign: string; order: string }>();
  for (const c of s.data.campaigns) {
    if (c.type !== 'SESSION_COMPLETION' && c.type !== 'ROLE_SUBMISSION') continue;
    for (let i = 0; i < RECORDS; i++) {
      const r = c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED');
      want.set(String(r.id), { campaign: c.id, order: String(r.order_index) });
    }
  }
  const rows = await pgRows(
    schema,
    'SELECT id, campaign_id, order_index::text AS o FROM session_results UNION ALL SELECT id, campaign_id, order_index::text FROM role_results',
  );
  expect(rows.length).toBe(want.size);
  for (const r of rows) expect({ campaign: r.campaign_id, order: r.o }).toEqual(want.get(r.id as string));
  const state = await pgRows(schema, 'SELECT campaign_id, cursor::text AS cursor, records::int AS records FROM sync_state');
  for (const st of state) {
    const c = s.data.byId.get(st.campaign_id as string);
    expect(st.cursor).toBe(String(s.data.orderIndex(c as NonNullable<typeof c>, RECORDS - 1)));
    expect(st.records).toBe(RECORDS);
  }
}

/** The checkpoint moves of each stream, by process: once a second process moved one, the first never did again. */
async function expectNoStaleCommit(schema: string, stale: number): Promise<void> {
  const rows = await pgRows(schema, 'SELECT stream, app, cursor::text AS cursor FROM audit ORDER BY n');
  const byStream = new Map<string, Array<{ pid: number; cursor: bigint }>>();
  for (const r of rows) {
    const pid = Number(/pid (\d+)/.exec(r.app as string)?.[1]);
    byStream.set(r.stream as string, [...(byStream.get(r.stream as string) ?? []), { pid, cursor: BigInt(r.cursor as string) }]);
  }
  for (const [stream, moves] of byStream) {
    const firstOther = moves.findIndex((m) => m.pid !== stale);
    if (firstOther >= 0)
      expect(
        moves.slice(firstOther).some((m) => m.pid === stale),
        `stream ${stream}`,
      ).toBe(false);
    for (let i = 1; i < moves.length; i++)
      expect((moves[i] as { cursor: bigint }).cursor > (moves[i - 1] as { cursor: bigint }).cursor).toBe(true);
  }
}

/** Streams the worker of process `pid` holds a lease of now. */
async function leasesOf(schema: string, pid: number | undefined): Promise<number> {
  const r = await pgRows(
    schema,
    `SELECT count(*)::int AS n FROM leases l JOIN workers w ON w.id = l.worker WHERE w.pid = ${Number(pid)} AND l.expires_at > clock_timestamp()`,
  );
  return r[0]?.n as number;
}

async function committedBy(schema: string, pid: number | undefined): Promise<number> {
  const r = await pgRows(schema, `SELECT count(*)::int AS n FROM audit WHERE app LIKE 'campaign-sync pid ${Number(pid)} %'`);
  return r[0]?.n as number;
}

const done = async (w: RunningCli) => {
  const { code } = await w.exited;
  return { code, stderr: w.stderr() };
};

describePg('a fleet of workers on one PostgreSQL mirror', () => {
  it('three workers at once: none exits 75, no stream is synced by two at once, the mirror equals the service', async () => {
    // Slow answers: a stream's requests overlap in time if two workers sync it at once.
    const s = await sim({ campaigns: 6, records: RECORDS, faults: { slow: 1 }, slowMs: 15 });
    const schema = freshSchema();
    await prepare(s, schema);
    const workers = [0, 1, 2].map(() => startCli(pullArgs(s, schema, ['--concurrency', '2']), hostEnv(s)));
    const results = await Promise.all(workers.map(done));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    expect(s.stats.streamOverlaps, s.stats.overlappedStreams.join(', ')).toBe(0);
    await expectExact(s, schema);
    await expectNoStaleCommit(schema, -1);
  });

  it('three workers at the service limit, one joining late: a long backfill draws no 429 and uses at least 90% of the budget', async () => {
    // A window long beside a request's time: a slot is busy from its take until a window after its
    // answer, so a loaded machine's slower answers cost the budget little (100 ms: 2.5%).
    const limit = { count: 20, windowMs: 4000 };
    const s = await sim({ campaigns: 6, records: RECORDS, rateLimit: limit });
    const schema = freshSchema();
    await prepare(s, schema);
    // The set-up's request (sent by its own budget) out of the server's window first.
    await new Promise((r) => setTimeout(r, limit.windowMs));
    const from = s.stats.recentAnswers.length;
    const args = pullArgs(s, schema, ['--concurrency', '2']).map((a) => (a === '100000/1m' ? '20/4s' : a));
    // Two start together; the third joins once the budget binds them (past the first window's burst).
    const workers = [0, 1].map(() => startCli(args, hostEnv(s)));
    await until(async () => s.stats.recentAnswers.length - from > limit.count + 5, 'the first window to pass');
    workers.push(startCli(args, hostEnv(s)));
    const results = await Promise.all(workers.map(done));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const answers = s.stats.recentAnswers.slice(from);
    expect(answers.filter((a) => a.status === 429)).toEqual([]);
    expect(answers.length).toBeGreaterThan(2 * limit.count);
    // The share of the budget used: the least time the limit allows for these requests (the first
    // window's burst, then a window for each further `count` of them) over the time they took.
    const fastest = Math.ceil((answers.length - limit.count) / limit.count) * limit.windowMs;
    const took = (answers.at(-1)?.at ?? 0) - (answers[0]?.at ?? 0);
    expect(fastest / took, `${answers.length} requests in ${(took / 1000).toFixed(1)} s`).toBeGreaterThanOrEqual(0.9);
    expect(s.stats.streamOverlaps, s.stats.overlappedStreams.join(', ')).toBe(0);
    await expectExact(s, schema);
  });

  it('kill -9 of a worker mid-page: workers started meanwhile join without 75 and finish its streams after its lease, exactly once', async () => {
    const s = await sim({ campaigns: 4, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
    const schema = freshSchema();
    await prepare(s, schema);
    const a = startCli(pullArgs(s, schema, ['--concurrency', '2']), hostEnv(s));
    await until(
      async () => (await leasesOf(schema, a.child.pid)) > 0 && (await committedBy(schema, a.child.pid)) > 0,
      'worker A to commit',
    );
    const others = [0, 1].map(() => startCli(pullArgs(s, schema, ['--concurrency', '2']), hostEnv(s)));
    a.child.kill('SIGKILL');
    await a.exited;
    const results = await Promise.all(others.map(done));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    await expectExact(s, schema);
    await expectNoStaleCommit(schema, Number(a.child.pid));
  });

  it('a worker frozen past its lease: another takes its streams; woken, it commits nothing for them', async () => {
    const s = await sim({ campaigns: 2, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
    const schema = freshSchema();
    await prepare(s, schema);
    const a = startCli(pullArgs(s, schema, ['--concurrency', '2']), hostEnv(s));
    try {
      await until(
        async () => (await leasesOf(schema, a.child.pid)) > 0 && (await committedBy(schema, a.child.pid)) > 0,
        'worker A to commit',
      );
      a.child.kill('SIGSTOP');
      const b = await cli(pullArgs(s, schema), hostEnv(s));
      expect(b.code, b.stderr).toBe(0);
      await expectExact(s, schema);
      const before = await committedBy(schema, a.child.pid);
      a.child.kill('SIGCONT');
      const woken = await done(a);
      // Its page under way fails on the lease (or, frozen inside a transaction, on the connection the
      // server ended: fatal, on stderr). Frozen between two pages, its next page's fence fails: that
      // stream's failure is in the pass's table, on stdout.
      expect(woken.code).not.toBe(0);
      expect(`${woken.stderr}\n${a.stdout()}`).toMatch(/lost its lease|terminat|Connection/i);
      expect(await committedBy(schema, a.child.pid)).toBe(before);
      await expectExact(s, schema);
      await expectNoStaleCommit(schema, Number(a.child.pid));
    } finally {
      a.child.kill('SIGCONT');
      a.child.kill('SIGKILL');
    }
  });

  it("a worker whose clock is 10 minutes ahead takes no live worker's lease", async () => {
    const s = await sim({ campaigns: 3, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
    const schema = freshSchema();
    await prepare(s, schema);
    const a = startCli(pullArgs(s, schema, ['--concurrency', '3']), hostEnv(s));
    await until(async () => (await leasesOf(schema, a.child.pid)) > 0, 'worker A to take its streams');
    const ahead = startCli(
      pullArgs(s, schema, ['--concurrency', '3']),
      hostEnv(s, { NODE_OPTIONS: `--import ${CLOCK_OFFSET}`, CAMPAIGN_SYNC_TEST_CLOCK_OFFSET_MS: String(10 * 60_000) }),
    );
    const results = await Promise.all([a, ahead].map(done));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    expect(s.stats.streamOverlaps, s.stats.overlappedStreams.join(', ')).toBe(0);
    await expectExact(s, schema);
    await expectNoStaleCommit(schema, -1);
  });

  it('two watches on one mirror share the streams by staleness: neither exits 75, no stream synced twice at once', async () => {
    const s = await sim({ campaigns: 6, records: RECORDS, faults: { slow: 1 }, slowMs: 15 });
    const schema = freshSchema();
    await prepare(s, schema);
    const args = ['watch', '--pg-schema', schema, '--base-url', s.url, '--page-size', '10', '--rate-limit', '100000/1m'];
    const watches = [0, 1].map(() => startCli([...args, '--lease', '2s', '--interval', '1s', '--max-cycles', '3', '--json'], hostEnv(s)));
    const results = await Promise.all(watches.map(done));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    expect(s.stats.streamOverlaps, s.stats.overlappedStreams.join(', ')).toBe(0);
    await expectExact(s, schema);
    await expectNoStaleCommit(schema, -1);
  });
});
