/**
 * `export --since-last <consumer>`, on every kind that exports (./mirrors.ts says how to add a case):
 * each consumer gets what changed since its previous export: new results, results changed (a
 * re-score read again by --full), and the ones reconcile --prune deleted (rows with `_deleted_at`),
 * in CSV, NDJSON or Parquet; a consumer's place moves only once its file is in place. What only a
 * PostgreSQL server with several writers shows is test/component/store/pg/change-numbers.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { parseStrictCsv } from '../helpers/csv.js';
import { sim, tempDir } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';

type Row = Record<string, unknown>;

const ndjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);

/** `export --since-last` of mirror `m` into a new file of `dir`; returns the file written. */
function exporter(m: Mirror, s: RunningSimulator, dir: string) {
  let n = 0;
  return async (consumer: string, format = 'ndjson', ...extra: string[]) => {
    const out = join(dir, `${consumer}-${n++}.${format}`);
    const flags = ['--table', 'session-results', '--format', format, '--since-last', consumer, '-o', out, '--quiet', ...extra];
    const r = await m.run(s, 'export', ...flags);
    expect(r.code, r.stderr).toBe(0);
    return out;
  };
}

async function pulled(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<void> {
  const r = await m.run(s, 'pull', ...args);
  expect(r.code, r.stderr).toBe(0);
}

describe.each(MIRRORS)('export --since-last (%s)', (kind) => {
  it('gives each consumer the new, the changed and the deleted results since its last export, and nothing twice', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 20, growth: { count: 3, windowMs: 60_000 }, now: () => now });
    const m = open(kind);
    await pulled(m, s);
    const dir = tempDir();
    const since = exporter(m, s, dir);
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    if (session === undefined) throw new Error('no session campaign');

    // A consumer's first export: every row, no deletions, none of the mirror's bookkeeping.
    const first = ndjson(await since('warehouse'));
    expect(first.length).toBe(20);
    expect(first.every((r) => r._deleted_at === null)).toBe(true);
    expect(Object.keys(first[0] as Row)).not.toContain('change_seq');
    // Nothing changed: nothing again.
    expect(ndjson(await since('warehouse'))).toEqual([]);

    // New results arrive, one is re-scored, one is deleted by the service.
    now += 60_000;
    const rescored = s.data.sessionResult(session, 4).id;
    const removed = s.data.sessionResult(session, 7).id;
    s.changes.rescore(session, 4, now);
    s.changes.remove(session, 7);
    await pulled(m, s, '--full');
    const pruned = await m.run(s, 'reconcile', '--prune');
    expect(pruned.code, pruned.stderr).toBe(0);
    // The tombstone holds the result's id and campaign, nothing of the candidate.
    expect(await m.sql('SELECT table_name, id, campaign_id FROM tombstones')).toEqual([
      { table_name: 'session_results', id: removed, campaign_id: session.id },
    ]);

    const second = ndjson(await since('warehouse'));
    const deleted = second.filter((r) => r._deleted_at !== null);
    expect(deleted.map((r) => [r.id, r.campaign_id])).toEqual([[removed, session.id]]);
    expect(Number.isNaN(Date.parse(deleted[0]?._deleted_at as string))).toBe(false);
    expect(deleted[0]?.user_email).toBeNull();
    const changed = second.filter((r) => r._deleted_at === null).map((r) => r.id);
    expect(changed).toContain(rescored);
    expect(changed.length).toBe(1 + 3);
    expect(ndjson(await since('warehouse'))).toEqual([]);

    // Another consumer has its own place: its first export is every row there is now, no deletions.
    const other = ndjson(await since('dashboards'));
    expect(other.length).toBe(20 + 3 - 1);
    expect(other.some((r) => r.id === removed)).toBe(false);

    // Parquet and CSV carry the same column; --columns picks columns, _deleted_at and _deleted_reason always last.
    now += 60_000;
    await pulled(m, s);
    const bytes = readFileSync(await since('warehouse', 'parquet'));
    const rows = (await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    })) as Row[];
    expect(rows.length).toBe(3);
    expect(rows.every((r) => '_deleted_at' in r && r._deleted_at === null)).toBe(true);
    const [header, ...csv] = parseStrictCsv(readFileSync(await since('dashboards', 'csv', '--columns', 'id,score'), 'utf8'));
    expect(header).toEqual(['id', 'score', '_deleted_at', '_deleted_reason']);
    expect(csv.length).toBe(3);
    // The mirror's bookkeeping is no column of any export.
    const bad = await m.run(
      s,
      'export',
      '--table',
      'session-results',
      '--columns',
      'id,change_seq',
      '--since-last',
      'w',
      '-o',
      join(tempDir(), 'x.csv'),
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/session-results has no column "change_seq"/);
  });

  it("an export that fails leaves the consumer's place where it was; the next one gives the changes", async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 10 });
    const m = open(kind);
    await pulled(m, s);
    const dir = tempDir();
    const bad = await m.run(s, 'export', '--table', 'role-results', '--since-last', 'w', '-o', join(dir, 'missing', 'x.ndjson'));
    expect(bad.code).toBe(74);
    expect(Number((await m.sql('SELECT count(*) AS n FROM export_consumers'))[0]?.n)).toBe(0);
    const args = ['--table', 'role-results', '--format', 'ndjson', '--since-last', 'w', '-o', join(dir, 'x.ndjson'), '--json'];
    const ok = await m.run(s, 'export', ...args);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ rows: 10, tombstones: 0, consumer: 'w', from_change: null });
    const lines = ndjson(join(dir, 'x.ndjson'));
    expect(Object.keys(lines[0] as Row)).not.toContain('change_seq');
    // The role results' raw is the record whole (rebuilt from its score details).
    expect(typeof (lines[0] as Row).raw).toBe('object');
    const again = await m.run(s, 'export', ...args);
    expect(JSON.parse(again.stdout)).toMatchObject({ rows: 0, tombstones: 0, from_change: JSON.parse(ok.stdout).to_change });
  });

  it('bad uses are exit 2, naming the flag', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 5 });
    const m = open(kind);
    await pulled(m, s);
    const o = ['-o', join(tempDir(), 'x.csv')];
    for (const [args, says] of [
      [['--table', 'session-results', '--since-last', 'w'], /--since-last needs -o/],
      [
        ['--table', 'eval-results', '--since-last', 'w', '--columns', 'skill_key,score', ...o],
        /--since-last needs the key among --columns \(parent_type\)/,
      ],
      [['--table', 'session-results', '--since-last', '../x', ...o], /--since-last: a consumer name/],
      [
        ['--table', 'session-results', '--since-last', 'w', '--since', '2026-01-01', ...o],
        /does not go with --campaign, --since or --until/,
      ],
    ] as const) {
      const r = await m.run(s, 'export', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(says);
    }
  });
});
