/**
 * `pull --metrics-file` on every mirror: the counters count on across pulls, kept in the mirror (a
 * SQLite file, an NDJSON destination's database, a PostgreSQL schema), by host and metrics file;
 * every listed stream has its health and times. ./mirrors.ts says how cases run on each kind.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalPath } from '../../src/core/fs/private-file.js';
import { tempDir } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { MIRRORS, open, unsupported } from './mirrors.js';

/** The value of the one sample matching `pattern` (a line of the file, anchored). */
function sample(text: string, pattern: string): number | undefined {
  const m = new RegExp(`^${pattern} (\\S+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}

const sum = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);

describe.each(MIRRORS)('pull --metrics-file (%s)', (kind) => {
  it('counts on across pulls from what the mirror keeps for this host and file; another file counts on its own', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 12 });
    const m = open(kind);
    const prom = join(tempDir(), 'campaign_sync.prom');
    const texts: string[] = [];
    for (let n = 1; n <= 3; n++) {
      const r = await m.run(s, 'pull', '--metrics-file', prom, '--page-size', '5', '--quiet');
      expect(r.code, r.stderr).toBe(0);
      texts.push(readFileSync(prom, 'utf8'));
    }
    expect(texts.map((t) => sample(t, 'campaign_sync_passes_total\\{result="ok"\\}'))).toEqual([1, 2, 3]);
    expect(texts.map((t) => sample(t, 'campaign_sync_requests_total\\{endpoint="/v1/campaigns",status="200"\\}'))).toEqual([1, 2, 3]);
    // Records are written once, by the first pull: the total stays.
    expect(texts.map((t) => sum(t, 'campaign_sync_records_written_total'))).toEqual([24, 24, 24]);
    // The second and third pulls find nothing new, at the same cost each: the totals grow by it twice.
    const [one, two, three] = texts.map((t) => sum(t, 'campaign_sync_requests_total')) as [number, number, number];
    expect(three - two).toBe(two - one);
    expect(two - one).toBeGreaterThan(0);
    expect(one).toBeGreaterThan(two - one);
    for (const t of texts) {
      expect([...t.matchAll(/^campaign_sync_stream_healthy\{[^}]*\} (\S+)$/gm)].map((x) => x[1])).toEqual(['1', '1']);
      expect([...t.matchAll(/^campaign_sync_last_attempt_timestamp_seconds\{[^}]*\} (\S+)$/gm)].length).toBe(2);
    }

    const rows = await m.state('SELECT scope, name, labels, value FROM metric_counters ORDER BY name, labels');
    expect(new Set(rows.map((r) => r.scope))).toEqual(new Set([`${hostname()}:${canonicalPath(prom)}`]));
    expect(rows.find((r) => r.name === 'campaign_sync_passes_total')).toMatchObject({ labels: '[["result","ok"]]', value: 3 });

    const other = join(tempDir(), 'other.prom');
    const r = await m.run(s, 'pull', '--metrics-file', other, '--quiet');
    expect(r.code, r.stderr).toBe(0);
    expect(sample(readFileSync(other, 'utf8'), 'campaign_sync_passes_total\\{result="ok"\\}')).toBe(1);
  });
});
