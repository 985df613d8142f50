/**
 * `export --since-last`'s change numbers on a PostgreSQL team mirror, where several writers commit at
 * once (store/pg/changes.ts): a page that took a lower number and commits after a higher one is never
 * skipped, a stuck writer makes the export give up rather than wait for ever, and a DETAILED record
 * whose score details alone changed is a change. What every mirror does is test/contract/since-last.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { tempDir } from '../../../helpers/index.js';
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

describePg('export --since-last: the change numbers of PostgreSQL', () => {
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
      const err = await readPgChanges(m.db, 'w', 'session-results', (all) => all, 200).catch((e: unknown) => e);
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
