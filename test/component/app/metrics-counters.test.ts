/**
 * The metrics' per-stream samples and the counters a metrics file shows: every listed stream has a
 * health sample and both times, a stream that never succeeded too (0); a campaign no longer listed is
 * left out; the file shows the totals the mirror keeps, and when they cannot be kept, the totals as
 * they were (a counter never goes back), the failure returned for the pull to report (74).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SyncMetrics } from '../../../src/app/metrics.js';
import { MetricsFile } from '../../../src/app/metrics-file.js';
import { StorageError } from '../../../src/errors.js';
import type { CounterStore, CounterValue } from '../../../src/store/port.js';
import { tempDir } from '../../helpers/index.js';
import { streamRow } from '../../helpers/records.js';
import { runCli } from '../../helpers/run-cli.js';

const T = (iso: string) => Date.parse(iso) / 1000;

/** The samples of a metric, by their `stream` label. */
async function byStream(metrics: SyncMetrics, name: string): Promise<Record<string, number>> {
  const text = await metrics.registry.metrics();
  return Object.fromEntries(
    [...text.matchAll(new RegExp(`^${name}\\{stream="([^"]+)"[^}]*\\} (\\S+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]),
  );
}

describe('per-stream samples', () => {
  it('health, last attempt and last success for every listed stream, a never-succeeded one at 0; an unlisted or retired one left out', async () => {
    const metrics = new SyncMetrics();
    metrics.streams([
      streamRow({ stream: 'ok', last_success_at: '2026-01-01T00:10:00.000Z' }),
      streamRow({
        stream: 'broke',
        last_success_at: '2026-01-01T00:10:00.000Z',
        last_error: '404',
        last_error_at: '2026-01-01T00:15:00.000Z',
      }),
      streamRow({ stream: 'never', last_error: '404', last_error_at: '2026-01-01T00:15:00.000Z' }),
      streamRow({ stream: 'begun' }),
      streamRow({ stream: 'gone', last_success_at: '2026-01-01T00:10:00.000Z', unlisted_since: '2026-01-01T00:12:00.000Z' }),
      streamRow({ stream: 'retyped', last_success_at: '2026-01-01T00:10:00.000Z', type_changed_to: 'ROLE_SUBMISSION' }),
    ]);
    expect(await byStream(metrics, 'campaign_sync_stream_healthy')).toEqual({ ok: 1, broke: 0, never: 0, begun: 0 });
    expect(await byStream(metrics, 'campaign_sync_last_success_timestamp_seconds')).toEqual({
      ok: T('2026-01-01T00:10:00Z'),
      broke: T('2026-01-01T00:10:00Z'),
      never: 0,
      begun: 0,
    });
    expect(await byStream(metrics, 'campaign_sync_last_attempt_timestamp_seconds')).toEqual({
      ok: T('2026-01-01T00:10:00Z'),
      broke: T('2026-01-01T00:15:00Z'),
      never: T('2026-01-01T00:15:00Z'),
      begun: 0,
    });
    // A later look at the streams replaces the samples: one that recovered is 1, one unlisted since goes.
    metrics.streams([streamRow({ stream: 'never', last_success_at: '2026-01-01T00:20:00.000Z' })]);
    expect(await byStream(metrics, 'campaign_sync_stream_healthy')).toEqual({ never: 1 });
  });
});

/** A mirror's counters in memory; `failing` makes add throw as a mirror whose writes stopped does. */
function memoryStore(start: CounterValue[], failing = false): CounterStore & { kept: CounterValue[] } {
  const store = {
    kept: [...start],
    totals: async () => store.kept,
    add: async (_scope: string, counts: readonly CounterValue[]) => {
      if (failing) throw new StorageError('cannot keep the metrics’ counters in m.db: disk full (SQLITE_FULL)', { code: 'SQLITE_FULL' });
      for (const c of counts) {
        const same = store.kept.find((k) => k.name === c.name && JSON.stringify(k.labels) === JSON.stringify(c.labels));
        store.kept = same ? store.kept.map((k) => (k === same ? { ...k, value: k.value + c.value } : k)) : [...store.kept, { ...c }];
      }
      return store.kept;
    },
  };
  return store;
}

const PASSES_OK: CounterValue = { name: 'campaign_sync_passes_total', labels: { result: 'ok' }, value: 5 };

describe('a metrics file shows the totals the mirror keeps', () => {
  it("adds this run's counts to them; totals of names or labels this release lacks are left out", async () => {
    const path = join(tempDir(), 'm.prom');
    const file = new MetricsFile(path, undefined);
    const store = memoryStore([
      PASSES_OK,
      { name: 'campaign_sync_retired_total', labels: {}, value: 9 },
      { name: 'campaign_sync_passes_total', labels: { outcome: 'ok' }, value: 7 },
    ]);
    await file.open(store);
    file.metrics.failedPass(10, 5);
    expect(await file.write()).toBeUndefined();
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^campaign_sync_passes_total\{result="ok"\} 5$/m);
    expect(text).toMatch(/^campaign_sync_passes_total\{result="failed"\} 1$/m);
    expect(text).not.toContain('retired');
    expect(text).not.toContain('outcome');
  });

  it('counters that cannot be kept: the file shows the totals as they were, never fewer, and the failure is returned', async () => {
    const path = join(tempDir(), 'm.prom');
    const file = new MetricsFile(path, undefined);
    await file.open(memoryStore([PASSES_OK], true));
    file.metrics.failedPass(10, 74);
    const unkept = await file.write();
    expect(unkept).toBeInstanceOf(StorageError);
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^campaign_sync_passes_total\{result="ok"\} 5$/m);
    expect(text).not.toMatch(/result="failed"/);
    expect(text).toMatch(/^campaign_sync_last_pass_exit_code 74$/m);
  });
});

describe('--metrics-file-mode', () => {
  let saved: number | undefined;
  afterEach(() => {
    if (saved !== undefined) process.umask(saved);
    saved = undefined;
  });

  it('a mode others could write, one that is no mode, or one without --metrics-file: exit 2, nothing done', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' };
    const cases: Array<[string[], string]> = [
      [
        ['--metrics-file', join(dir, 'm.prom'), '--metrics-file-mode', '0664'],
        '--metrics-file-mode: 0664 lets other users change the metrics node_exporter serves; give one without group or other write, such as 644 or 0640',
      ],
      [
        ['--metrics-file', join(dir, 'm.prom'), '--metrics-file-mode', '646'],
        '--metrics-file-mode: 646 lets other users change the metrics',
      ],
      [
        ['--metrics-file', join(dir, 'm.prom'), '--metrics-file-mode', 'u=rw'],
        '--metrics-file-mode: "u=rw" is not a file mode; give three octal digits, such as 644 or 0640',
      ],
      [['--metrics-file-mode', '0644'], '--metrics-file-mode is the mode of --metrics-file: give both'],
    ];
    for (const [args, said] of cases) {
      const r = await runCli(['pull', '--db', db, ...args], { env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`campaign-sync: ${said}`);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('gives the file that mode exactly, whatever the umask', async () => {
    saved = process.umask(0o077);
    const path = join(tempDir(), 'm.prom');
    const file = new MetricsFile(path, 0o644);
    await file.open(memoryStore([]));
    await file.write();
    expect((statSync(path).mode & 0o777).toString(8)).toBe('644');
    // Without it: 0644 less the umask.
    const plain = new MetricsFile(path, undefined);
    await plain.write();
    expect((statSync(path).mode & 0o777).toString(8)).toBe('600');
  });
});
