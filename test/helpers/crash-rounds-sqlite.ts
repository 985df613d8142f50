/**
 * The promises of PRODUCT.md §4 under crashes and faults: kill -9 at random instants, then finish;
 * a faulty service; every record present exactly once, cursors right, the database intact.
 *
 * CRASH_KILLS sets the number of kills per sink (default 20).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../src/api/budget.js';
import { ApiClient } from '../../src/api/client.js';
import { exitCodeForPass } from '../../src/errors.js';
import { parseFaults } from '../../src/simulator/faults.js';
import { prng } from '../../src/simulator/random.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { SqliteCheckpoints } from '../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { SqliteSink } from '../../src/store/sqlite/sink.js';
import { runPass } from '../../src/sync/pass.js';
import { cli, clientConfig, servedRecords, sim, startCli, tempDir } from './index.js';
import { passDefaults } from './mock.js';

/** Registers the crash rounds with `KILLS` kills per sink (e2e: one; soak: twenty). */
export function registerCrashRounds(KILLS: number): void {
  const CAMPAIGNS = 4;
  const RECORDS = 600;

  /** Cursors equal the last order_index of every campaign; integrity_check ok. */
  function checkState(s: RunningSimulator, dbPath: string) {
    const db = new Database(dbPath, { readonly: true });
    db.defaultSafeIntegers(true);
    expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
    const rows = db.prepare('SELECT campaign_id, cursor, records FROM sync_state').all() as Array<{
      campaign_id: string;
      cursor: bigint;
      records: bigint;
    }>;
    expect(rows.length).toBe(CAMPAIGNS);
    for (const r of rows) {
      const c = s.data.byId.get(r.campaign_id);
      expect(r.cursor).toBe(s.data.orderIndex(c as NonNullable<typeof c>, RECORDS - 1));
      expect(r.records).toBe(BigInt(RECORDS));
    }
    return db;
  }

  /**
   * Pulls killed with SIGKILL at seeded random instants. When a pull gets to finish before its kill,
   * that mirror is verified and a fresh one is started, until `KILLS` kills have landed mid-run; the
   * last mirror is then finished by a pull left alone. `verify` runs on every finished mirror.
   */
  async function crashRounds(
    s: RunningSimulator,
    dir: string,
    sinkArgs: (n: number) => string[],
    verify: (n: number) => void,
    seed: number,
  ) {
    const random = prng(seed);
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    let kills = 0;
    let mirror = 0;
    while (kills < KILLS) {
      const run = startCli(['pull', '--page-size', '20', ...sinkArgs(mirror)], { env, cwd: dir });
      const delay = 100 + Math.floor(random() * 900);
      const outcome = await Promise.race([run.exited.then(() => 'done' as const), new Promise((r) => setTimeout(() => r('kill'), delay))]);
      if (outcome === 'kill') run.child.kill('SIGKILL');
      const { code, signal } = await run.exited;
      if (signal === 'SIGKILL') kills++;
      else {
        expect(code, run.stderr()).toBe(0);
        verify(mirror);
        mirror++;
      }
    }
    const final = await cli(['pull', ...sinkArgs(mirror)], { env, cwd: dir });
    expect(final.code, final.stderr).toBe(0);
    verify(mirror);
    return { kills, mirrors: mirror + 1 };
  }

  describe('crash safety: kill -9 at random instants', () => {
    it(`sqlite sink: ${KILLS} kills, then every record exactly once`, async () => {
      // Slow replies stretch the pull so kills land mid-request as well as mid-commit.
      const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
      const dir = tempDir();
      const expected = servedRecords(s, RECORDS);
      let evals = 0;
      for (const text of expected.values()) {
        const r = JSON.parse(text);
        evals += r.score_details
          ? r.score_details.reduce((n: number, d: { eval_results: unknown[] }) => n + d.eval_results.length, 0)
          : r.eval_results.length;
      }
      const verify = (n: number) => {
        const db = checkState(s, join(dir, `m${n}.db`));
        const ids = [
          ...(db.prepare('SELECT id FROM session_results').pluck().all() as string[]),
          ...(db.prepare('SELECT id FROM role_results').pluck().all() as string[]),
        ];
        expect(ids.length).toBe(CAMPAIGNS * RECORDS);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect(expected.has(id)).toBe(true);
        // Re-reads replace child rows; they never double them.
        expect(Number(db.prepare('SELECT count(*) FROM eval_results').pluck().get())).toBe(evals);
        db.close();
      };
      const { kills } = await crashRounds(s, dir, (n) => ['--db', join(dir, `m${n}.db`)], verify, 1234);
      expect(kills).toBe(KILLS);
    }, 600_000);

    it(`ndjson sink: ${KILLS} kills, then every line exactly once and equal to what was served`, async () => {
      const s = await sim({ campaigns: CAMPAIGNS, records: RECORDS, faults: { slow: 1 }, slowMs: 25 });
      const dir = tempDir();
      const expected = servedRecords(s, RECORDS);
      const verify = (n: number) => {
        checkState(s, join(dir, `state${n}.db`)).close();
        const out = join(dir, `out${n}`);
        const lines = ['session_results', 'role_results'].flatMap((f) =>
          readFileSync(join(out, `${f}.ndjson`), 'utf8')
            .split('\n')
            .filter(Boolean),
        );
        expect(lines.length).toBe(CAMPAIGNS * RECORDS);
        const seen = new Set<string>();
        for (const line of lines) {
          const id = JSON.parse(line).id as string;
          expect(seen.has(id)).toBe(false);
          seen.add(id);
          expect(line).toBe(expected.get(id));
        }
        expect(readFileSync(join(out, 'campaigns.ndjson'), 'utf8').split('\n').filter(Boolean).length).toBe(CAMPAIGNS);
      };
      const { kills } = await crashRounds(
        s,
        dir,
        (n) => ['--db', join(dir, `state${n}.db`), '--format', 'ndjson', '--out', join(dir, `out${n}`)],
        verify,
        5678,
      );
      expect(kills).toBe(KILLS);
    }, 600_000);
  });

  describe('a faulty service', () => {
    // In-process with short backoff: the real client, pass and SQLite sink against the real simulator,
    // minus the minutes of real backoff (the backoff schedule itself is unit-tested in client.test.ts).
    it('with over 25% of requests failing (500, 503, 429, resets, truncations, slow) the pull completes and the mirror is exact', async () => {
      const s = await sim({ campaigns: CAMPAIGNS, records: 300, faults: parseFaults('0.35'), slowMs: 300, faultRetryAfterS: 0 });
      // Pages of 10: over 120 requests, so every kind of fault shows up.
      const dir = tempDir();
      const dbPath = join(dir, 'm.db');
      const rate = { count: 100_000, windowMs: 1000 };
      const client = new ApiClient(clientConfig(s, { rate, maxRetries: 12 }), {
        budget: new RequestBudget(rate),
        retry: { baseMs: 5, capMs: 50 },
      });
      const db = openDatabase(dbPath);
      const state = new SqliteCheckpoints(db);
      let result: Awaited<ReturnType<typeof runPass>>;
      try {
        result = await runPass({ client, sink: new SqliteSink(db, state), state }, { ...passDefaults, pageSize: 10 });
      } finally {
        await client.close();
        db.close();
      }
      expect(exitCodeForPass(result), JSON.stringify(result.streams.map((r) => r.error))).toBe(0);
      expect(result.streams.every((r) => r.status === 'ok')).toBe(true);
      expect(Object.keys(s.stats.faults).sort()).toEqual(['429', '500', '503', 'reset', 'slow', 'truncate']);
      const faults = Object.values(s.stats.faults).reduce((a, b) => a + b, 0);
      expect(faults / s.stats.requests).toBeGreaterThanOrEqual(0.25);
      const check = new Database(dbPath, { readonly: true });
      expect(check.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
      const ids = [
        ...(check.prepare('SELECT id FROM session_results').pluck().all() as string[]),
        ...(check.prepare('SELECT id FROM role_results').pluck().all() as string[]),
      ];
      expect(ids.length).toBe(CAMPAIGNS * 300);
      expect(new Set(ids).size).toBe(ids.length);
      check.close();
    }, 300_000);
  });
}
