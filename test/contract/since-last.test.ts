/**
 * `export --since-last <consumer>`: each consumer gets what changed since its previous export: new
 * results, results changed (a re-score read again by --full), and the ones reconcile --prune deleted
 * (rows with `_deleted_at`), in CSV, NDJSON or Parquet; a consumer's place moves only once its file
 * is in place.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { exportTable } from '../../src/commands/export.js';
import { resolveSettings } from '../../src/config/settings.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { parseStrictCsv } from '../helpers/csv.js';
import { sim, tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';

type Row = Record<string, unknown>;

describe('export --since-last', () => {
  it('gives each consumer the new, the changed and the deleted results since its last export, and nothing twice', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 20, growth: { count: 3, windowMs: 60_000 }, now: () => now });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await runCli(['pull', '--db', db], { env })).code).toBe(0);
    let n = 0;
    const since = async (consumer: string, format = 'ndjson', extra: Record<string, string> = {}) => {
      const out = join(dir, `${consumer}-${n++}.${format}`);
      expect(
        await exportTable(
          resolveSettings('export', { db, table: 'session-results', format, sinceLast: consumer, output: out, quiet: true, ...extra }),
        ),
      ).toBe(0);
      return out;
    };
    const ndjson = (path: string) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Row);
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    if (session === undefined) throw new Error('no session campaign');

    // A consumer's first export: every row, no deletions.
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
    expect((await runCli(['pull', '--db', db, '--full'], { env })).code).toBe(0);
    expect((await runCli(['reconcile', '--db', db, '--prune'], { env })).code).toBe(0);

    const second = ndjson(await since('warehouse'));
    const deleted = second.filter((r) => r._deleted_at !== null);
    expect(deleted.map((r) => [r.id, r.campaign_id])).toEqual([[removed, session.id]]);
    expect(Number.isNaN(Date.parse(deleted[0]?._deleted_at as string))).toBe(false);
    // The tombstone names the record and its campaign, nothing of the candidate.
    expect(deleted[0]?.user_email).toBeNull();
    const changed = second.filter((r) => r._deleted_at === null).map((r) => r.id);
    expect(changed).toContain(rescored);
    expect(changed.length).toBe(1 + 3);
    expect(ndjson(await since('warehouse'))).toEqual([]);

    // Another consumer has its own place: its first export is every row there is now, no deletions.
    const other = ndjson(await since('dashboards'));
    expect(other.length).toBe(20 + 3 - 1);
    expect(other.some((r) => r.id === removed)).toBe(false);

    // Parquet and CSV carry the same column; --columns picks columns, _deleted_at always last.
    now += 60_000;
    expect((await runCli(['pull', '--db', db], { env })).code).toBe(0);
    const bytes = readFileSync(await since('warehouse', 'parquet'));
    const rows = (await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    })) as Row[];
    expect(rows.length).toBe(3);
    expect(rows.every((r) => '_deleted_at' in r && r._deleted_at === null)).toBe(true);
    const [header, ...csv] = parseStrictCsv(readFileSync(await since('dashboards', 'csv', { columns: 'id,score' }), 'utf8'));
    expect(header).toEqual(['id', 'score', '_deleted_at']);
    expect(csv.length).toBe(3);
  });

  it("an export that fails leaves the consumer's place where it was; the next one gives the changes", async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const bad = await runCli([
      'export',
      '--db',
      db,
      '--table',
      'role-results',
      '--since-last',
      'w',
      '-o',
      join(dir, 'missing', 'x.ndjson'),
    ]);
    expect(bad.code).toBe(74);
    const mirror = openDatabase(db, { readonly: true });
    expect(mirror.prepare('SELECT count(*) FROM export_consumers').pluck().get()).toBe(0);
    mirror.close();
    const ok = await runCli([
      'export',
      '--db',
      db,
      '--table',
      'role-results',
      '--format',
      'ndjson',
      '--since-last',
      'w',
      '-o',
      join(dir, 'x.ndjson'),
      '--json',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ rows: 10, tombstones: 0, consumer: 'w', from_change: null });
  });

  it('bad uses are exit 2, naming the flag', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const o = ['-o', join(dir, 'x.csv')];
    for (const [args, says] of [
      [['--table', 'session-results', '--since-last', 'w'], /--since-last needs -o/],
      [['--table', 'eval-results', '--since-last', 'w', ...o], /--since-last: exports what changed in session-results or role-results/],
      [['--table', 'session-results', '--since-last', '../x', ...o], /--since-last: a consumer name/],
      [
        ['--table', 'session-results', '--since-last', 'w', '--since', '2026-01-01', ...o],
        /does not go with --campaign, --since or --until/,
      ],
    ] as const) {
      const r = await runCli(['export', '--db', db, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(says);
    }
  });
});
