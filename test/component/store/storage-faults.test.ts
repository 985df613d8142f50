/**
 * Issue 10, item 1: a failed write or commit during a multi-stream pull loses nothing. After it the
 * process writes nothing more (every stream stops, the pass fails with exit 74); every checkpoint
 * stays at the end of what is stored; once the storage is fixed, the next pull completes the mirror
 * record by record. Faults are injected deterministically in-process (a COMMIT that fails, a full
 * database, a failing NDJSON append) and for real (a full tmpfs, through the spawned CLI).
 */
import { mkdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { streamId } from '../../../src/core/types.js';
import { ExitCode, exitCodeForPass, StorageError } from '../../../src/errors.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import type { PageSink } from '../../../src/store/port.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { type Db, openDatabase } from '../../../src/store/sqlite/db.js';
import { Database } from '../../../src/store/sqlite/driver.js';
import { NdjsonSink } from '../../../src/store/sqlite/ndjson/sink.js';
import { SqliteSink } from '../../../src/store/sqlite/sink.js';
import { runPass } from '../../../src/sync/pass.js';
import { clientConfig, servedRecords, sim, tempDir } from '../../helpers/index.js';
import { passDefaults, withCommitPage } from '../../helpers/mock.js';
import { mountTmpfs, resizeTmpfs } from '../../helpers/mounts.js';
import { runCli } from '../../helpers/run-cli.js';

const CAMPAIGNS = 4;
const RECORDS = 200;
const PAGE = 10;

function client(s: RunningSimulator): ApiClient {
  const rate = { count: 100_000, windowMs: 1000 };
  return new ApiClient(clientConfig(s, { rate, maxRetries: 0 }), { budget: new RequestBudget(rate) });
}

async function pass(s: RunningSimulator, sink: PageSink, state: SqliteCheckpoints) {
  const c = client(s);
  try {
    return await runPass({ client: c, sink, state }, { ...passDefaults, pageSize: PAGE, concurrency: 4 });
  } finally {
    await c.close();
  }
}

/** Delegates to `sink`; after the `after`-th committed page runs `fault` once; counts pages committed after a failure. */
function injecting(sink: PageSink, after: number, fault: () => void) {
  let pages = 0;
  let failedAt: number | undefined;
  const wrapped = Object.assign(
    withCommitPage(sink, async (...args) => {
      try {
        const counts = await sink.commitPage(...args);
        pages++;
        if (pages === after) fault();
        return counts;
      } catch (err) {
        failedAt ??= pages;
        throw err;
      }
    }),
    { committedAfterFailure: () => (failedAt === undefined ? 0 : pages - failedAt) },
  );
  return wrapped;
}

/**
 * No checkpoint sits past records that are not stored: for each stream, what is stored is exactly the
 * served records up to its cursor (a prefix), and `records` agrees.
 */
function expectPrefixes(s: RunningSimulator, db: Db, stored: (campaignId: string, endpoint: string) => string[]) {
  const state = new SqliteCheckpoints(db);
  for (const row of state.all()) {
    const c = s.data.byId.get(row.campaign_id) as NonNullable<ReturnType<typeof s.data.byId.get>>;
    const ids = stored(row.campaign_id, row.endpoint);
    const count = row.cursor === null ? 0 : s.data.firstAfter(c, row.cursor);
    const expected = Array.from(
      { length: count },
      (_, i) => (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED')).id,
    );
    expect(ids, `stream ${row.stream} at cursor ${row.cursor}`).toEqual(expected);
  }
}

function sqliteIds(db: Db) {
  return (campaignId: string, endpoint: string) =>
    db
      .prepare(`SELECT id FROM ${endpoint === 'session' ? 'session_results' : 'role_results'} WHERE campaign_id = ? ORDER BY order_index`)
      .pluck()
      .all(campaignId) as string[];
}

/** The whole mirror equals what the simulator serves: every record once, `raw` byte for byte, cursors at the end. */
function expectExactSqlite(s: RunningSimulator, db: Db) {
  const expected = servedRecords(s, RECORDS);
  const rows = [
    ...(db.prepare('SELECT id, raw FROM session_results').all() as Array<{ id: string; raw: string }>),
    ...(db.prepare('SELECT id, raw FROM role_results_full').all() as Array<{ id: string; raw: string }>),
  ];
  expect(rows.length).toBe(CAMPAIGNS * RECORDS);
  for (const r of rows) expect(r.raw).toBe(expected.get(r.id));
  for (const row of new SqliteCheckpoints(db).all()) {
    const c = s.data.byId.get(row.campaign_id) as NonNullable<ReturnType<typeof s.data.byId.get>>;
    expect(row.cursor).toBe(s.data.orderIndex(c, RECORDS - 1));
    expect(row.records).toBe(BigInt(RECORDS));
  }
}

function ndjsonLines(out: string, file: string): string[] {
  return readFileSync(join(out, file), 'utf8').split('\n').filter(Boolean);
}

function expectExactNdjson(s: RunningSimulator, out: string) {
  const expected = servedRecords(s, RECORDS);
  const lines = [...ndjsonLines(out, 'session_results.ndjson'), ...ndjsonLines(out, 'role_results.ndjson')];
  expect(lines.length).toBe(CAMPAIGNS * RECORDS);
  const seen = new Set<string>();
  for (const line of lines) {
    const id = JSON.parse(line).id as string;
    expect(seen.has(id), `${id} written twice`).toBe(false);
    seen.add(id);
    expect(line).toBe(expected.get(id));
  }
  expect(ndjsonLines(out, 'campaigns.ndjson').length).toBe(CAMPAIGNS);
}

describe('a failed write or commit stops the process and loses nothing (SQLite)', () => {
  it('a COMMIT that fails mid-pass: every stream stops, exit 74, and the next pull completes the mirror exactly', async () => {
    const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
    const db = openDatabase(join(tempDir(), 'm.db'));
    // A deferred foreign-key violation is only checked at COMMIT: a commit failure on demand.
    db.pragma('foreign_keys = ON');
    db.exec(
      'CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)',
    );
    const state = new SqliteCheckpoints(db);
    const sink = injecting(new SqliteSink(db, state, { records: 40, bytes: 1e9, ms: 60_000 }), 9, () =>
      db.exec('INSERT INTO child VALUES (42)'),
    );
    const err = await pass(s, sink, state).catch((e) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err.exitCode).toBe(ExitCode.storage);
    expect(err.message).toMatch(/cannot commit to .*m\.db: .*FOREIGN KEY/);
    expect(sink.committedAfterFailure()).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(sink.committedAfterFailure()).toBe(0);
    expect(db.inTransaction).toBe(false);
    expectPrefixes(s, db, sqliteIds(db));
    // Later writes of the same process are refused without touching the database.
    await expect(sink.campaigns([])).rejects.toThrow(StorageError);
    expect(db.inTransaction).toBe(false);

    const again = await pass(s, new SqliteSink(db, state), state);
    expect(exitCodeForPass(again)).toBe(0);
    expectExactSqlite(s, db);
    db.close();
  });

  it('a database that fills up (SQLITE_FULL) mid-pass: exit 74, then after freeing space the mirror is exact', async () => {
    const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
    const db = openDatabase(join(tempDir(), 'm.db'));
    const state = new SqliteCheckpoints(db);
    const sink = injecting(new SqliteSink(db, state, { records: 40, bytes: 1e9, ms: 60_000 }), 13, () => {
      db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
    });
    const err = await pass(s, sink, state).catch((e) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err.message).toMatch(/database or disk is full \(SQLITE_FULL\)/);
    expect(sink.committedAfterFailure()).toBe(0);
    expectPrefixes(s, db, sqliteIds(db));

    db.pragma('max_page_count = 1073741823');
    const again = await pass(s, new SqliteSink(db, state), state);
    expect(exitCodeForPass(again)).toBe(0);
    expectExactSqlite(s, db);
    db.close();
  });

  it('a checkpoint moved by someone else is a fatal conflict, never a silent skip', async () => {
    const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
    const db = openDatabase(join(tempDir(), 'm.db'));
    const state = new SqliteCheckpoints(db);
    const victim = s.data.campaigns[0] as NonNullable<(typeof s.data.campaigns)[0]>;
    const sink = injecting(new SqliteSink(db, state, { records: 40, bytes: 1e9, ms: 60_000 }), 5, () =>
      db.prepare('UPDATE sync_state SET cursor = cursor + 1000 WHERE campaign_id = ?').run(victim.id),
    );
    const err = await pass(s, sink, state).catch((e) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err.message).toMatch(/checkpoint of stream .* is at \d+, not at \d+ where this process left it/);
    expect(sink.committedAfterFailure()).toBe(0);
    db.close();
  });

  it('the compare-and-set itself: a move from the wrong cursor throws and changes nothing', () => {
    const db = openDatabase(join(tempDir(), 'm.db'));
    const state = new SqliteCheckpoints(db);
    const id = streamId('c1', 'session', null);
    state.ensure(id);
    state.advance(id, { from: undefined, to: 10n }, 10);
    expect(() => state.advance(id, { from: undefined, to: 20n }, 10)).toThrow(/is at 10, not at none/);
    expect(() => state.advance(id, { from: 9n, to: 20n }, 10)).toThrow(StorageError);
    expect(state.cursor(id)).toBe(10n);
    state.advance(id, { from: 10n, to: 2n ** 62n }, 5);
    expect(state.cursor(id)).toBe(2n ** 62n);
    expect(state.all()[0]?.records).toBe(15n);
    db.close();
  });
});

describe('a failed append stops the process and loses nothing (NDJSON)', () => {
  it('an append that fails (ENOSPC) mid-pass: exit 74, nothing more written, then exactly once after freeing space', async () => {
    const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
    const dir = tempDir();
    const out = join(dir, 'out');
    const db = openDatabase(join(dir, 'state.db'));
    const state = new SqliteCheckpoints(db);
    let appends = 0;
    let afterFailure = 0;
    const sink = new NdjsonSink(db, state, out, {
      limits: { records: 40, bytes: 1e9, ms: 60_000 },
      write: (fd, buffer, offset, length, position) => {
        appends++;
        if (appends === 15) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
        if (appends > 15) afterFailure++;
        // Half a page is on disk when the next append fails: the tail a crash would leave.
        return writeSync(fd, buffer, offset, length, position);
      },
    });
    const err = await pass(s, sink, state).catch((e) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err.exitCode).toBe(ExitCode.storage);
    expect(err.message).toMatch(/cannot write .*_results\.ndjson: no space left on the device \(ENOSPC\)/);
    expect(afterFailure).toBe(0);
    await sink.close();
    const committed = new Map(
      (db.prepare('SELECT path, committed_bytes FROM ndjson_files').all() as Array<{ path: string; committed_bytes: number }>).map((r) => [
        r.path,
        r.committed_bytes,
      ]),
    );
    // Every committed length ends on a line, and what is committed is a prefix of each stream.
    for (const [path, bytes] of committed) {
      const data = readFileSync(path);
      expect(data.length).toBeGreaterThanOrEqual(bytes);
      if (bytes > 0) expect(data[bytes - 1]).toBe(0x0a);
    }
    const committedIds = (file: string) =>
      readFileSync(join(out, file))
        .subarray(0, committed.get(join(out, file)) ?? 0)
        .toString('utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: string; campaign: { id: string } });
    expectPrefixes(s, db, (campaignId, endpoint) =>
      committedIds(endpoint === 'session' ? 'session_results.ndjson' : 'role_results.ndjson')
        .filter((r) => r.campaign.id === campaignId)
        .map((r) => r.id),
    );

    const again = await pass(s, new NdjsonSink(db, state, out), state);
    expect(exitCodeForPass(again)).toBe(0);
    expectExactNdjson(s, out);
    db.close();
  });
});

describe('a real full disk (tmpfs), through the CLI', () => {
  for (const format of ['sqlite', 'ndjson'] as const) {
    it(`${format}: exit 74 naming the path; after freeing space two pulls complete the mirror exactly`, async (ctx) => {
      const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS });
      const dir = join(tempDir(), 'disk');
      mkdirSync(dir);
      const undo = mountTmpfs(dir, format === 'sqlite' ? 640 : 320);
      if (!undo) return ctx.skip();
      try {
        const dbPath = join(dir, 'm.db');
        const out = join(dir, 'out');
        const args = [
          'pull',
          '--db',
          dbPath,
          '--page-size',
          String(PAGE),
          ...(format === 'ndjson' ? ['--format', 'ndjson', '--out', out] : []),
        ];
        const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
        const full = await runCli(args, { env });
        expect(full.code, full.stderr).toBe(ExitCode.storage);
        expect(full.stderr).toMatch(/campaign-sync: .*(m\.db|\.ndjson).*(full|no space)/);
        expect(
          full.stderr
            .trim()
            .split('\n')
            .filter((l) => l.startsWith('campaign-sync:')),
        ).toHaveLength(1);

        resizeTmpfs(dir, 64 * 1024);
        const first = await runCli(args, { env });
        expect(first.code, first.stderr).toBe(0);
        const second = await runCli([...args, '--json'], { env });
        expect(second.code, second.stderr).toBe(0);
        expect(JSON.parse(second.stdout).records).toBe(0);
        if (format === 'sqlite') {
          const db = new Database(dbPath, { readonly: true });
          db.defaultSafeIntegers(true);
          expectExactSqlite(s, db);
          db.close();
        } else {
          expectExactNdjson(s, out);
        }
      } finally {
        undo();
      }
    });
  }
});
