/**
 * `status` on every kind of mirror beyond ./mirror.test.ts's listing (./mirrors.ts says how to add a
 * case): cursors exact past 2^53, and `--check` healthy when fresh, unhealthy once a stream fails.
 * The health rule's every verdict and text are test/component/commands/health.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { sim } from '../helpers/index.js';
import { alter, MIRRORS, open, unsupported } from './mirrors.js';

describe.each(MIRRORS)('status (%s)', (kind) => {
  it('lists the streams with exact cursors; --check is 0 when fresh, 4 with a failing stream', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 30, orderIndexStart: 9_007_199_254_740_990n });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const status = await m.run(s, 'status', '--json');
    expect(status.code, status.stderr).toBe(0);
    const doc = JSON.parse(status.stdout) as { streams: Array<{ campaign_id: string; cursor: string; records: number }> };
    expect(doc.streams).toHaveLength(2);
    for (const row of doc.streams) {
      const c = s.data.byId.get(row.campaign_id);
      expect(row.cursor).toBe(String(s.data.orderIndex(c as NonNullable<typeof c>, 29)));
      expect(row.records).toBe(30);
    }
    const check = await m.run(s, 'status', '--check');
    expect(check.code, check.stdout).toBe(0);
    // A failing stream makes --check say so (exit 4 when some are unhealthy).
    await alter(
      m,
      `UPDATE sync_state SET last_error = 'HTTP 500', last_error_at = '${new Date().toISOString()}' WHERE stream = (SELECT min(stream) FROM sync_state)`,
    );
    const failing = await m.run(s, 'status', '--check');
    expect(failing.code).toBe(4);
    expect(failing.stdout).toContain('HTTP 500');
  });
});
