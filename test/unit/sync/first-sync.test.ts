/**
 * The health rule during a first sync (sync/health.ts): with a process syncing the mirror, a stream
 * that has neither succeeded nor failed is `syncing`, and the verdict is `degraded` (WARNING), never
 * `down`; without one, the same stream is `never` synced, as before.
 */
import { describe, expect, it } from 'vitest';
import { assessHealth, type StreamState } from '../../../src/sync/health.js';
import { healthLines, nagiosReport } from '../../../src/ui/health.js';

const now = Date.parse('2026-03-01T12:00:00Z');
const by = { pid: 4711, host: 'worker-1', since: '2026-03-01T11:48:00.000Z' };
const MAX = 600_000;

const row = (stream: string, over: Partial<StreamState> = {}): StreamState => ({
  stream,
  last_success_at: null,
  last_error: null,
  last_error_at: null,
  ...over,
});
const label = (r: StreamState) => r.stream;

describe('assessHealth with a sync in progress', () => {
  it('streams not synced yet are in their first sync: degraded, not down', () => {
    const rows = [row('a'), row('b')];
    expect(assessHealth(rows, now, MAX).verdict).toBe('down');
    const h = assessHealth(rows, now, MAX, by);
    expect(h.verdict).toBe('degraded');
    expect(h.unhealthy.map((u) => u.reason)).toEqual(['syncing', 'syncing']);
    expect(healthLines(h, label, now)).toEqual([
      'a: first sync in progress since 2026-03-01T11:48:00.000Z (12 min ago), pid 4711 on worker-1',
      'b: first sync in progress since 2026-03-01T11:48:00.000Z (12 min ago), pid 4711 on worker-1',
      'WARNING: 0 of 2 streams healthy (max age 10m)',
    ]);
    const nagios = nagiosReport(h, rows, label, now);
    expect(nagios.code).toBe(1);
    expect(nagios.lines[0]).toMatch(
      /^CAMPAIGN-SYNC WARNING - first sync in progress since 2026-03-01T11:48:00\.000Z \(12 min ago\), pid 4711 on worker-1: 0 of 2 streams healthy \(2 in their first sync\), max age 10m \| .*syncing=2;;;0;2/,
    );
  });

  it('no stream committed yet: WARNING naming the sync, not CRITICAL "no streams"', () => {
    const h = assessHealth([], now, MAX, by);
    expect(h.verdict).toBe('degraded');
    expect(nagiosReport(h, [], label, now).lines[0]).toMatch(
      /^CAMPAIGN-SYNC WARNING - first sync in progress since .*, pid 4711 on worker-1: no stream has committed yet \|/,
    );
    expect(assessHealth([], now, MAX).verdict).toBe('down');
  });

  it('a stream failing in its first sync is failing; healthy ones count as ever', () => {
    const ok = row('ok', { last_success_at: new Date(now - 60_000).toISOString() });
    const failing = row('bad', { last_error: '404 Not Found', last_error_at: new Date(now - 1000).toISOString() });
    const h = assessHealth([ok, failing, row('new')], now, MAX, by);
    expect(h.verdict).toBe('degraded');
    expect(h.healthy).toBe(1);
    expect(h.unhealthy.map((u) => [u.row.stream, u.reason])).toEqual([
      ['bad', 'failing'],
      ['new', 'syncing'],
    ]);
    // Every stream healthy: OK, the sync in progress changes nothing.
    expect(assessHealth([ok], now, MAX, by).verdict).toBe('ok');
    // Nothing but failures: still down, whoever holds the mirror.
    expect(assessHealth([failing], now, MAX, by).verdict).toBe('down');
  });
});
