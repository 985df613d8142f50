/**
 * The run's clock (`run(argv, io)`'s `io.clock`, core/io.ts currentClock) is what the waits and the
 * ages of a command go by: a test sets it forward, or lets its sleeps return at once, instead of
 * waiting the real time. Each case fails if its wait or age went by the real clock.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { realClock } from '../../../src/core/clock.js';
import { STALE_AFTER_MS } from '../../../src/core/fs/partial-file.js';
import { fakeClock } from '../../helpers/clock.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

describe("the run's clock", () => {
  it('watch waits --interval (and its jitter) between passes on it: three passes an hour apart end at once', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const start = Date.now();
    const clock = fakeClock(start);
    const r = await runCli(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '1h', '--max-cycles', '3', '--quiet'], {
      env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
      clock,
    });
    expect(r.code, r.stderr).toBe(0);
    // Two pauses (none after the last pass), each the interval plus at most 5% of jitter.
    const pauses = clock.sleeps.filter((ms) => ms >= 3_000_000);
    expect(pauses).toHaveLength(2);
    for (const ms of pauses) {
      expect(ms).toBeGreaterThanOrEqual(3_600_000 - 1000);
      expect(ms).toBeLessThanOrEqual(3_780_000);
    }
    expect(clock.now() - start).toBeGreaterThanOrEqual(7_200_000);
  });

  it("an export's partial file of a process still running is stale once the clock says an hour passed, not before", async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await runCli(['pull', '--db', db, '--quiet'], { env })).code).toBe(0);
    const out = join(dir, 'r.csv');
    // Left by this very process (its pid runs), written just now.
    const partial = `.r.csv.campaign-sync-${process.pid}-0123456789abcdef.partial`;
    writeFileSync(join(dir, partial), 'x', { mode: 0o600 });
    const exportAt = (clock: typeof realClock) => runCli(['export', '--db', db, '--table', 'session-results', '-o', out], { clock });
    expect((await exportAt(realClock)).code).toBe(0);
    expect(readdirSync(dir)).toContain(partial);
    expect((await exportAt(fakeClock(Date.now() + STALE_AFTER_MS - 60_000))).code).toBe(0);
    expect(readdirSync(dir)).toContain(partial);
    expect((await exportAt(fakeClock(Date.now() + STALE_AFTER_MS + 60_000))).code).toBe(0);
    expect(readdirSync(dir)).not.toContain(partial);
  });
});
