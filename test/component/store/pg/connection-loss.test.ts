/**
 * A PostgreSQL mirror whose connections are lost mid-pass: a page's backend ended under way
 * (pg_terminate_backend), the pool's idle backends, the server restarted
 * (fast and immediate), idle_session_timeout. Against real servers: what is checked is what the
 * driver and the server do, and the CLI's answer to it: one line naming the database (never its
 * password), exit 74 when the pass had to stop, no "Unhandled 'error' event", no stack trace, and a
 * mirror left exact (a second pull stores every record once). `watch` tries again at its next pass.
 *
 * Mid-pass is arranged, not timed: a trigger of the mirror makes every insert wait for an advisory
 * lock (the gate) that the test holds once `GATE_AFTER` results are stored, so the pass is stopped
 * inside a page's statement while the test ends backends, then the gate opens.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { readPgChanges } from '../../../../src/store/pg/changes.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { readOnlyRows } from '../../../../src/store/pg/export.js';
import { afterWatchStart, type RunningCli, servedRecords, sim, startCli } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { startPgServer, TEST_PG_PASSWORD, type TestPgServer } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';

const CAMPAIGNS = 2;
const RECORDS = 200;
const PAGE = '20';
/** Results stored before the gate holds inserts: a few pages in. */
const GATE_AFTER = 60;
/** The gate's advisory lock (one bigint key: objsubid 1, never one of the mirror's two-key locks). */
const GATE_KEY = 740_074;

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  // A restart ends the test's own connections too: an error event must not end the test process.
  c.on('error', () => {});
  await c.connect();
  return c;
}

/**
 * Runs `fn` with the URL of a role of its own whose sessions the server ends after `timeout` idle
 * (idle_session_timeout, PostgreSQL 14 and later); the role and what it owns are dropped after.
 */
async function withIdleTimeoutRole(timeout: string, fn: (url: string) => Promise<void>): Promise<void> {
  const admin = await connect(PG_URL);
  const role = `idle_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(PG_URL);
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${TEST_PG_PASSWORD}'`);
    await admin.query(`GRANT CREATE ON DATABASE postgres TO ${role}`);
    await admin.query(`ALTER ROLE ${role} SET idle_session_timeout = '${timeout}'`);
    url.username = role;
    await fn(url.toString());
  } finally {
    await admin.query(`DROP OWNED BY ${role} CASCADE`).catch(() => {});
    await admin.query(`REVOKE CREATE ON DATABASE postgres FROM ${role}`).catch(() => {});
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    await admin.end();
  }
}

/**
 * Creates the mirror in `schema` (migrated, as a pull would) with the gate's trigger on role results:
 * the role campaign's stream is held there while the session campaign's completes, whose connection
 * then waits idle in the pool.
 */
async function gatedMirror(url: string, schema: string): Promise<void> {
  const db = await PgDatabase.open(url, schema);
  try {
    await db.query(`CREATE FUNCTION ${schema}.gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM role_results) >= ${GATE_AFTER} THEN
    PERFORM pg_advisory_xact_lock_shared(${GATE_KEY});
  END IF;
  RETURN NULL;
END $$`);
    await db.query(`CREATE TRIGGER gate BEFORE INSERT ON role_results FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.gate()`);
  } finally {
    await db.close();
  }
}

/** The gate, shut: inserts past GATE_AFTER wait until `open()`. */
async function shutGate(url: string): Promise<{ open(): Promise<void> }> {
  const c = await connect(url);
  await c.query('SELECT pg_advisory_lock($1)', [GATE_KEY]);
  return { open: () => c.end().catch(() => {}) };
}

interface Backend {
  pid: number;
  state: string | null;
  /** Waiting at the gate: a page's statement under way. */
  gated: boolean;
  /** Holds a stream lock of the mirror. */
  locks: boolean;
}

/** The backends of the campaign-sync process `pid` (its connections carry its pid in application_name). */
async function backends(admin: pg.Client, pid: number): Promise<Backend[]> {
  const r = await admin.query<Backend>(
    `SELECT a.pid, a.state,
            EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1 AND l.objid = $2) AS gated,
            EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 2) AS locks
       FROM pg_stat_activity a WHERE a.application_name = $1`,
    [`campaign-sync pid ${pid} on ${hostname()}`.slice(0, 63), GATE_KEY],
  );
  return r.rows;
}

/**
 * Waits until `test` holds for the backends of `run`'s process, polling the server: however slow the
 * machine, for as long as the command runs (the test's timeout is the only bound).
 */
async function until(admin: pg.Client, run: RunningCli, test: (b: Backend[]) => boolean, what: string): Promise<Backend[]> {
  for (;;) {
    if (run.child.exitCode !== null) throw new Error(`${what}: the command ended first (exit ${run.child.exitCode}): ${run.stderr()}`);
    const b = await backends(admin, run.child.pid as number);
    if (test(b)) return b;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until `sql` (run by `admin`) returns a row, for as long as `run`'s command runs. */
async function untilRow(admin: pg.Client, run: RunningCli, sql: string, values: unknown[], what: string): Promise<void> {
  for (;;) {
    if (run.child.exitCode !== null) throw new Error(`${what}: the command ended first (exit ${run.child.exitCode}): ${run.stderr()}`);
    if (((await admin.query(sql, values)).rowCount ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Ends the backends and waits until each is gone. */
async function terminate(admin: pg.Client, pids: number[]): Promise<void> {
  expect(pids.length).toBeGreaterThan(0);
  for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1, 30000)', [pid]);
}

/** One line on stderr naming the database without its password; no crash, no stack trace. */
function expectOneLine(output: string, pattern: RegExp, start = /^campaign-sync: /): void {
  const stderr = afterWatchStart(output);
  expect(stderr).not.toContain('Unhandled');
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toContain(TEST_PG_PASSWORD);
  expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
  expect(stderr).toMatch(start);
  expect(stderr).toMatch(/postgres:\/\/campaign_sync_test@127\.0\.0\.1:\d+\/postgres \(schema t_\w+\)/);
  expect(stderr.trimEnd()).toMatch(pattern);
}

/** Every record of every stream stored once, cursors at the last record, child rows never doubled. */
async function expectExact(url: string, s: RunningSimulator, schema: string, reportType: string): Promise<void> {
  const expected = servedRecords(s, RECORDS);
  let evals = 0;
  for (const text of expected.values()) {
    const r = JSON.parse(text);
    if (r.score_details && reportType === 'OVERALL') continue;
    evals += r.score_details
      ? r.score_details.reduce((n: number, d: { eval_results: unknown[] }) => n + d.eval_results.length, 0)
      : r.eval_results.length;
  }
  const c = await connect(url);
  try {
    await c.query(`SET search_path TO ${schema}`);
    const state = (await c.query('SELECT campaign_id, cursor::text AS cursor, records::text AS records FROM sync_state')).rows;
    expect(state.length).toBe(CAMPAIGNS);
    for (const r of state) {
      const camp = s.data.byId.get(r.campaign_id);
      expect(r.cursor).toBe(String(s.data.orderIndex(camp as NonNullable<typeof camp>, RECORDS - 1)));
      expect(r.records).toBe(String(RECORDS));
    }
    const ids = (await c.query('SELECT id FROM session_results UNION ALL SELECT id FROM role_results')).rows.map((r) => r.id as string);
    expect(ids.length).toBe(CAMPAIGNS * RECORDS);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(expected.has(id)).toBe(true);
    expect(Number((await c.query('SELECT count(*) AS n FROM eval_results')).rows[0]?.n)).toBe(evals);
  } finally {
    await c.end();
  }
}

/** Starts `command` on a gated mirror at `url`, and waits until its pass is held at the gate. */
async function heldAtGate(
  url: string,
  command: string[],
  reportType = 'DETAILED',
  /** Who holds the gate and watches the backends (a role whose idle sessions the server ends would not do). */
  adminUrl = url,
): Promise<{
  s: RunningSimulator;
  schema: string;
  run: RunningCli;
  admin: pg.Client;
  gate: { open(): Promise<void> };
  pull: string[];
  env: Record<string, string>;
}> {
  const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
  const schema = freshSchema();
  await gatedMirror(url, schema);
  // The URL (and its password) through the environment, as a careful operator gives it.
  const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: url };
  const pull = ['pull', '--report-type', reportType, '--page-size', PAGE, '--pg-schema', schema];
  const gate = await shutGate(adminUrl);
  const admin = await connect(adminUrl);
  const run = startCli([...command, '--report-type', reportType, '--page-size', PAGE, '--pg-schema', schema], { env });
  await until(admin, run, (b) => b.some((x) => x.gated), 'a page held at the gate');
  return { s, schema, run, admin, gate, pull, env };
}

describePg('a lost connection of the PostgreSQL mirror', () => {
  it.each([
    ['DETAILED', 'a page in a transaction'],
    ['OVERALL', 'a page of one statement'],
  ])('%s: the backend of %s ended under way: exit 74, one line, nothing lost', async (reportType) => {
    const { s, schema, run, admin, gate, pull, env } = await heldAtGate(PG_URL, ['pull'], reportType);
    try {
      const held = await backends(admin, run.child.pid as number);
      await terminate(
        admin,
        held.filter((b) => b.gated).map((b) => b.pid),
      );
      await gate.open();
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(74);
      expectOneLine(
        run.stderr(),
        /: cannot write to .*: terminating connection due to administrator command \(57P01\); nothing committed was lost: run again$/,
      );
    } finally {
      await gate.open();
      await admin.end();
    }
    const again = await runCli(pull, { env });
    expect(again.code, again.stderr).toBe(0);
    await expectExact(PG_URL, s, schema, reportType);
  });

  it('idle backends of the pool ended: the pool opens others, the pass completes', async () => {
    const { s, schema, run, admin, gate } = await heldAtGate(PG_URL, ['pull']);
    try {
      // The session campaign's stream done: its connection is back in the pool, idle.
      await untilRow(
        admin,
        run,
        `SELECT 1 FROM ${schema}.sync_state WHERE endpoint = 'session' AND last_success_at IS NOT NULL`,
        [],
        'the session stream done',
      );
      const held = await until(admin, run, (b) => b.some((x) => x.state === 'idle' && !x.locks), 'an idle connection in the pool');
      await terminate(
        admin,
        held.filter((b) => b.state === 'idle' && !b.locks).map((b) => b.pid),
      );
      await gate.open();
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(0);
      expect(run.stderr()).toBe('');
    } finally {
      await gate.open();
      await admin.end();
    }
    await expectExact(PG_URL, s, schema, 'DETAILED');
  });

  it('reconcile: the backend of a page ended under way: exit 74, one line; reconcile again completes', async () => {
    const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
    const schema = freshSchema();
    await gatedMirror(PG_URL, schema);
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: PG_URL };
    const args = ['--page-size', PAGE, '--pg-schema', schema];
    const first = await runCli(['pull', ...args], { env });
    expect(first.code, first.stderr).toBe(0);
    const gate = await shutGate(PG_URL);
    const admin = await connect(PG_URL);
    const run = startCli(['reconcile', ...args], { env });
    try {
      const held = await until(admin, run, (b) => b.some((x) => x.gated), 'a page held at the gate');
      await terminate(
        admin,
        held.filter((b) => b.gated).map((b) => b.pid),
      );
      await gate.open();
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(74);
      expectOneLine(run.stderr(), /: cannot write to .*: terminating connection due to administrator command \(57P01\)/);
    } finally {
      await gate.open();
      await admin.end();
    }
    const again = await runCli(['reconcile', ...args], { env });
    expect(again.code, again.stderr).toBe(0);
    await expectExact(PG_URL, s, schema, 'DETAILED');
  });

  it('watch: a pass whose backend was ended fails with one line; the next pass, on new connections, completes', async () => {
    const { s, schema, run, admin, gate } = await heldAtGate(PG_URL, ['watch', '--interval', '1s', '--max-cycles', '3']);
    try {
      const held = await backends(admin, run.child.pid as number);
      // The page under way and the stream locks' connection: both are opened anew.
      await terminate(
        admin,
        held.filter((b) => b.gated || b.locks).map((b) => b.pid),
      );
      await gate.open();
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(0);
      expectOneLine(
        run.stderr(),
        / pass 1 failed: (cannot write to|lost the stream locks of) .*: terminating connection due to administrator command \(57P01\); nothing committed was lost: run again$/,
        /^error: \S+ pass 1 failed: /,
      );
      expect(run.stdout()).toMatch(/ pass 2: /);
      expect(run.stdout()).toMatch(/ pass 3: /);
    } finally {
      await gate.open();
      await admin.end();
    }
    await expectExact(PG_URL, s, schema, 'DETAILED');
  });

  it('idle_session_timeout shorter than the pass: the pool opens other connections, the stream leases stay, the pass completes', async () => {
    await withIdleTimeoutRole('300ms', async (url) => {
      const { s, schema, run, admin: watcher, gate } = await heldAtGate(url, ['pull'], 'DETAILED', PG_URL);
      try {
        // Held past the timeout: the pool's idle connections are ended; the leases live in rows, not sessions.
        await new Promise((r) => setTimeout(r, 1000));
        const leased = await watcher.query(`SELECT count(*)::int AS n FROM ${schema}.leases WHERE worker IS NOT NULL`);
        expect(leased.rows[0]?.n).toBeGreaterThan(0);
        await gate.open();
        const { code } = await run.exited;
        expect(code, run.stderr()).toBe(0);
        expect(run.stderr()).toBe('');
      } finally {
        await gate.open();
        await watcher.end();
      }
      await expectExact(PG_URL, s, schema, 'DETAILED');
    });
  });

  it("a pooled connection the server ended while idle, handed out before its end was read: a query, a transaction, a session, an export's read or an export --since-last runs again on a new one", async () => {
    await withIdleTimeoutRole('100ms', async (url) => {
      const db = await PgDatabase.open(url, freshSchema(), { connections: 1 });
      try {
        /** This process busy past the server's timeout: the pool's idle connection is ended, and that is not read yet. */
        const busy = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600);
        await db.query('SELECT 1');
        busy();
        const inTransaction = await db.transaction(async (c) => (await c.query('SELECT 1 AS n')).rows[0]);
        expect(inTransaction).toEqual({ n: 1 });
        busy();
        const alone = await db.session(async (c) => (await c.query('SELECT 2 AS n')).rows[0]);
        expect(alone).toEqual({ n: 2 });
        busy();
        expect((await db.query('SELECT 5 AS n')).rows[0]).toEqual({ n: 5 });
        busy();
        const exported: unknown[] = [];
        for await (const row of readOnlyRows(db, 'idle_export', 'SELECT 6 AS n', [])) exported.push(row);
        expect(exported).toEqual([{ n: 6 }]);
        // export --since-last: it reads the table's columns (a query), then takes a connection for the
        // window's end. Busy right after that query, whose connection is back in the pool by then: the
        // connection the window's end is handed is the one the server ended.
        const query = db.query.bind(db);
        db.query = (async (...args: Parameters<typeof query>) => {
          const out = await query(...args);
          busy();
          return out;
        }) as typeof db.query;
        const changes = await readPgChanges(db, 'idle_consumer', 'session-results', (available) => available);
        db.query = query;
        const changed: unknown[] = [];
        for await (const row of changes.rows()) changed.push(row);
        await changes.end();
        expect(changes.window).toEqual({ from: -1, to: 0 });
        expect(changed).toEqual([]);
        // A session that did something before the server ended it is not run again: its first statement committed.
        let runs = 0;
        const twice = db.session(async (c) => {
          runs++;
          await c.query('SELECT 3');
          busy();
          await c.query('SELECT 4');
        });
        await expect(twice).rejects.toThrow(/idle-session timeout \(57P05\); nothing committed was lost: run again/);
        expect(runs).toBe(1);
      } finally {
        await db.close();
      }
    });
  });
});

describePg('the PostgreSQL server restarted mid-pass (a server of this file’s own)', () => {
  let server: TestPgServer | undefined;
  beforeAll(async () => {
    server = await startPgServer();
  }, 120_000);
  afterAll(() => server?.stop());

  it.each(['fast', 'immediate'] as const)(
    'pg_ctl restart -m %s: exit 74, one line; the next pull completes, nothing lost',
    async (mode) => {
      const url = (server as TestPgServer).url;
      const { s, schema, run, admin, gate, pull, env } = await heldAtGate(url, ['pull']);
      try {
        (server as TestPgServer).restart(mode);
        const { code } = await run.exited;
        expect(code, run.stderr()).toBe(74);
        expectOneLine(run.stderr(), /: (cannot write to|lost the stream locks of) .*; nothing committed was lost: run again$/);
      } finally {
        await gate.open();
        await admin.end().catch(() => {});
      }
      const again = await runCli(pull, { env });
      expect(again.code, again.stderr).toBe(0);
      await expectExact(url, s, schema, 'DETAILED');
    },
  );

  it('watch: the server restarted during a pass; the next pass, on new connections, completes', async () => {
    const url = (server as TestPgServer).url;
    // A short lease: the stream leased by the pass the restart broke is free again soon.
    const { s, schema, run, admin, gate } = await heldAtGate(url, ['watch', '--interval', '1s', '--lease', '2s']);
    try {
      (server as TestPgServer).restart('fast');
      // However long the restart takes, a pass after it completes; a pass that finds the stream still
      // leased by the broken one skips it, so watch is stopped once the mirror holds every record.
      await run.waitFor(/ pass \d+: /, 60_000);
      for (let exact = false; !exact; ) {
        exact = await expectExact(url, s, schema, 'DETAILED').then(
          () => true,
          () => new Promise<boolean>((r) => setTimeout(() => r(false), 250)),
        );
      }
      run.child.kill('SIGTERM');
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(0);
      // Pass 1 fails; a pass that starts while the server is still going down or coming up (pass 2
      // starts at once when pass 1 took longer than the interval) fails the same way, one line each.
      const lines = afterWatchStart(run.stderr()).trimEnd().split('\n');
      expect(lines[0]).toMatch(/^error: \S+ pass 1 failed: (cannot write to|lost the stream locks of) /);
      for (const line of lines) {
        expect(line).toMatch(
          /^error: \S+ pass \d+ failed: (.*: )?(cannot (write to|open)|lost the stream locks of) postgres:\/\/campaign_sync_test@127\.0\.0\.1:\d+\/postgres \(schema t_\w+\)(: .*)?; nothing committed was lost: run again$/,
        );
        expect(line).not.toContain(TEST_PG_PASSWORD);
      }
      // The pass that completed, on new connections, is the one after the failed ones.
      expect(run.stdout()).toMatch(new RegExp(` pass ${lines.length + 1}: `));
    } finally {
      await gate.open();
      await admin.end().catch(() => {});
    }
    await expectExact(url, s, schema, 'DETAILED');
  });
});
