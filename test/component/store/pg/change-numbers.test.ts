/**
 * `export --since-last <consumer>` from a PostgreSQL team mirror, as from SQLite (test/component/export/since-last.test.ts):
 * each consumer gets the new, the changed and the pruned results since its previous export, in CSV,
 * NDJSON or Parquet; its place moves only once its file is in place. And what only a server with
 * several writers shows: a page that took a lower change number and commits after a higher one is
 * never skipped (store/pg/changes.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import type pg from 'pg';
import { expect, it } from 'vitest';
import { exportTable } from '../../../../src/commands/export.js';
import { resolveSettings } from '../../../../src/config/settings.js';
import { toJson } from '../../../../src/core/json.js';
import { type CheckedRecord, streamId } from '../../../../src/core/types.js';
import { LockedError } from '../../../../src/errors.js';
import { readPgChanges } from '../../../../src/store/pg/changes.js';
import { openPgMirror } from '../../../../src/store/pg/open.js';
import { planPage, writePage } from '../../../../src/store/pg/upserts.js';
import { parseStrictCsv } from '../../../helpers/csv.js';
import { cli, sim, tempDir } from '../../../helpers/index.js';
import { commitNow, describePg, freshSchema, PG_URL, pgClient, pgRows } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';

type Row = Record<string, unknown>;

const ndjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);

/** An in-process `export --since-last` of the mirror in `schema`; returns the file written. */
function exporter(schema: string, dir: string) {
  let n = 0;
  return async (consumer: string, table = 'session-results', format = 'ndjson', extra: Record<string, string> = {}) => {
    const out = join(dir, `${consumer}-${n++}.${format}`);
    const flags = { db: PG_URL, pgSchema: schema, table, format, sinceLast: consumer, output: out, quiet: true, ...extra };
    expect(await exportTable(resolveSettings('export', flags))).toBe(0);
    return out;
  };
}

function record(id: string, fields: Record<string, unknown> = {}): CheckedRecord {
  const record = { id, order_index: 1, user: { id: `u-${id}`, email: `${id}@example.org` }, score: 3, ...fields };
  return { record, id, orderIndex: 1n, raw: toJson(record) };
}

describePg('export --since-last from PostgreSQL', () => {
  it('gives each consumer the new, the changed and the deleted results since its last export, and nothing twice', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 20, growth: { count: 3, windowMs: 60_000 }, now: () => now });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await cli(['pull', ...db], { env })).code).toBe(0);
    const since = exporter(schema, tempDir());
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
    expect((await cli(['pull', ...db, '--full'], { env })).code).toBe(0);
    const pruned = await cli(['reconcile', ...db, '--prune'], { env });
    expect(pruned.code, pruned.stderr).toBe(0);
    // As SQLite's: the tombstone holds the result's id and campaign, nothing of the candidate.
    expect(await pgRows(schema, 'SELECT table_name, id, campaign_id FROM tombstones')).toEqual([
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

    // Parquet and CSV carry the same column; --columns picks columns, _deleted_at always last.
    now += 60_000;
    expect((await cli(['pull', ...db], { env })).code).toBe(0);
    const bytes = readFileSync(await since('warehouse', 'session-results', 'parquet'));
    const rows = (await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    })) as Row[];
    expect(rows.length).toBe(3);
    expect(rows.every((r) => '_deleted_at' in r && r._deleted_at === null)).toBe(true);
    const [header, ...csv] = parseStrictCsv(
      readFileSync(await since('dashboards', 'session-results', 'csv', { columns: 'id,score' }), 'utf8'),
    );
    expect(header).toEqual(['id', 'score', '_deleted_at']);
    expect(csv.length).toBe(3);
    // The mirror's bookkeeping is no column of any export.
    const bad = await cli([
      'export',
      ...db,
      '--table',
      'session-results',
      '--columns',
      'id,change_seq',
      '--since-last',
      'w',
      '-o',
      join(tempDir(), 'x.csv'),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/session-results has no column "change_seq"/);
  });

  it("an export that fails leaves the consumer's place where it was; the next one gives the changes", async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const dir = tempDir();
    expect((await cli(['pull', ...db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const bad = await cli(['export', ...db, '--table', 'role-results', '--since-last', 'w', '-o', join(dir, 'missing', 'x.ndjson')]);
    expect(bad.code).toBe(74);
    expect(await pgRows(schema, 'SELECT count(*)::int AS n FROM export_consumers')).toEqual([{ n: 0 }]);
    const args = [
      'export',
      ...db,
      '--table',
      'role-results',
      '--format',
      'ndjson',
      '--since-last',
      'w',
      '-o',
      join(dir, 'x.ndjson'),
      '--json',
    ];
    const ok = await cli(args);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ rows: 10, tombstones: 0, consumer: 'w', from_change: null });
    const lines = ndjson(join(dir, 'x.ndjson'));
    expect(Object.keys(lines[0] as Row)).not.toContain('change_seq');
    // The role results' raw is the record whole (rebuilt from its score details).
    expect(typeof (lines[0] as Row).raw).toBe('object');
    const again = await cli(args);
    expect(JSON.parse(again.stdout)).toMatchObject({ rows: 0, tombstones: 0, from_change: JSON.parse(ok.stdout).to_change });
  });

  it('bad uses are exit 2, naming the flag', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await cli(['pull', ...db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const o = ['-o', join(tempDir(), 'x.csv')];
    for (const [args, says] of [
      [['--table', 'session-results', '--since-last', 'w'], /--since-last needs -o/],
      [['--table', 'eval-results', '--since-last', 'w', ...o], /--since-last: exports what changed in session-results or role-results/],
      [['--table', 'session-results', '--since-last', '../x', ...o], /--since-last: a consumer name/],
      [
        ['--table', 'session-results', '--since-last', 'w', '--since', '2026-01-01', ...o],
        /does not go with --campaign, --since or --until/,
      ],
    ] as const) {
      const r = await cli(['export', ...db, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(says);
    }
    // A schema with no mirror is a usage error, and nothing is created in it.
    const none = freshSchema();
    const r = await cli(['export', '--db', PG_URL, '--pg-schema', none, '--table', 'session-results', '--since-last', 'w', ...o]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no campaign-sync mirror/);
    expect(await pgRows('public', `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = '${none}'`)).toEqual([{ n: 0 }]);
  });

  it('a page that took a lower number and commits after a higher one is not skipped; a rolled-back one leaves a harmless gap', async () => {
    const schema = freshSchema();
    const m = await openPgMirror(PG_URL, schema, 2);
    const writers: pg.Client[] = [];
    try {
      const a = streamId('ca', 'session', null);
      const b = streamId('cb', 'session', null);
      await m.sink.openStream(a);
      await m.sink.openStream(b);
      const since = exporter(schema, tempDir());
      expect(ndjson(await since('w'))).toEqual([]);
      const writer = async () => {
        const c = await pgClient();
        writers.push(c);
        await c.query(`SET search_path TO ${schema}`);
        await c.query('BEGIN');
        return c;
      };
      const write = (c: pg.Client, id: typeof a, records: CheckedRecord[]) =>
        writePage(c, planPage('session', records, id.campaignId, 'DETAILED'), { stream: id.key, move: undefined });

      // A rolled-back page: its number is never used.
      const gone = await writer();
      await write(gone, a, [record('s-gone')]);
      await gone.query('ROLLBACK');
      // The slow page takes its number first; the fast one takes the next and commits first.
      const slow = await writer();
      await write(slow, a, [record('s-slow')]);
      const fast = await writer();
      await write(fast, b, [record('s-fast')]);
      await fast.query('COMMIT');
      const numbers = await pgRows(schema, 'SELECT id, change_seq::int AS seq FROM session_results');
      expect(numbers).toEqual([{ id: 's-fast', seq: expect.any(Number) }]);

      // The export waits for the slow page rather than give the fast one's higher number alone.
      let settled = false;
      const exported = since('w').finally(() => {
        settled = true;
      });
      const watcher = await pgClient();
      writers.push(watcher);
      for (;;) {
        const waiting = await watcher.query(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1 AND objid = 4294967295 AND classid = (hashtext($1)::bigint & 4294967295)::oid",
          [`campaign-sync changes ${schema}`],
        );
        if (waiting.rows[0]?.n === 1) break;
        expect(settled).toBe(false);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(settled).toBe(false);
      await slow.query('COMMIT');
      const file = ndjson(await exported);
      expect(file.map((r) => r.id).sort()).toEqual(['s-fast', 's-slow']);
      const seqs = await pgRows(schema, 'SELECT id, change_seq::int AS seq FROM session_results ORDER BY change_seq');
      expect(seqs.map((r) => r.id)).toEqual(['s-slow', 's-fast']);
      expect(ndjson(await since('w'))).toEqual([]);

      // A record read again unchanged keeps its number; a changed one gets the page's.
      const again = await writer();
      await write(again, a, [record('s-slow'), record('s-new')]);
      await write(again, b, [record('s-fast', { score: 4 })]);
      await again.query('COMMIT');
      expect((await pgRows(schema, "SELECT change_seq::int AS seq FROM session_results WHERE id = 's-slow'"))[0]?.seq).toBe(seqs[0]?.seq);
      expect(
        ndjson(await since('w'))
          .map((r) => r.id)
          .sort(),
      ).toEqual(['s-fast', 's-new']);
    } finally {
      for (const c of writers) await c.end().catch(() => {});
      await m.release();
    }
  });

  it('an export kept waiting by a stuck writer gives up (exit 75) and holds back no page after', async () => {
    const schema = freshSchema();
    const m = await openPgMirror(PG_URL, schema, 1);
    const stuck = await pgClient();
    try {
      const a = streamId('ca', 'session', null);
      const b = streamId('cb', 'session', null);
      await m.sink.openStream(a);
      await m.sink.openStream(b);
      await stuck.query(`SET search_path TO ${schema}`);
      await stuck.query('BEGIN');
      await writePage(stuck, planPage('session', [record('s-stuck')], a.campaignId, 'DETAILED'), { stream: a.key, move: undefined });
      const err = await readPgChanges(m.db, 'w', 'session_results', (all) => all, 200).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockedError);
      expect((err as LockedError).exitCode).toBe(75);
      expect((err as Error).message).toMatch(/kept its change number for over 0.2 s; nothing was written: run again$/);
      expect((err as Error).message).not.toContain(TEST_PG_PASSWORD);
      // The export's lock went with its statement: another stream's page is not held back.
      expect(await commitNow(m.sink, b, [record('s-later')], undefined)).toEqual({ inserted: 1, updated: 0 });
      await stuck.query('ROLLBACK');
      expect(await pgRows(schema, 'SELECT count(*)::int AS n FROM export_consumers')).toEqual([{ n: 0 }]);
    } finally {
      await stuck.end().catch(() => {});
      await m.release();
    }
  });

  it('role results: a DETAILED record whose score details alone changed, and an OVERALL page, are changes', async () => {
    const schema = freshSchema();
    const m = await openPgMirror(PG_URL, schema, 1);
    try {
      const detailed = streamId('cd', 'role', 'DETAILED');
      const overall = streamId('co', 'role', 'OVERALL');
      await m.sink.openStream(detailed);
      await m.sink.openStream(overall);
      const role = (id: string, detailScore: number | undefined) =>
        record(id, {
          overall_score: 3,
          ...(detailScore === undefined ? {} : { score_details: [{ id: `${id}-d`, score: detailScore, eval_results: [] }] }),
        });
      await commitNow(m.sink, detailed, [role('r-d', 1), role('r-d2', 1)], undefined);
      await commitNow(m.sink, overall, [role('r-o', undefined)], undefined);
      const since = exporter(schema, tempDir());
      expect(
        ndjson(await since('w', 'role-results'))
          .map((r) => r.id)
          .sort(),
      ).toEqual(['r-d', 'r-d2', 'r-o']);
      // Stored once (compact.ts): the record's own row is the same, its score detail is not.
      expect(await commitNow(m.sink, detailed, [role('r-d', 2), role('r-d2', 1)], undefined)).toEqual({ inserted: 0, updated: 1 });
      await commitNow(m.sink, overall, [role('r-o2', undefined)], undefined);
      const changed = ndjson(await since('w', 'role-results'));
      expect(changed.map((r) => r.id).sort()).toEqual(['r-d', 'r-o2']);
      const detail = changed.find((r) => r.id === 'r-d') as { raw: { score_details: Array<{ score: number }> } };
      expect(detail.raw.score_details[0]?.score).toBe(2);
    } finally {
      await m.release();
    }
  });
});
