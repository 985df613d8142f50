/**
 * The PostgreSQL sink's pages (store/pg/sink.ts): a page's rows and its checkpoint's compare-and-set
 * commit together or not at all, both for a page of one statement (OVERALL role results: the
 * checkpoint is a CTE of the upsert, no BEGIN/COMMIT) and for a page in a transaction (DETAILED).
 */
import { expect, it } from 'vitest';
import { toJson } from '../src/core/json.js';
import { type CheckedRecord, streamId } from '../src/core/types.js';
import { StorageError } from '../src/errors.js';
import { openPgMirror } from '../src/store/pg/open.js';
import { commitNow, describePg, freshSchema, PG_URL } from './helpers/pg.js';

function role(id: string, orderIndex: bigint, detailed: boolean): CheckedRecord {
  const record: Record<string, unknown> = { id, order_index: Number(orderIndex), overall_score: 3 };
  if (detailed) record.score_details = [{ id: `${id}-d`, score: 1, eval_results: [] }];
  return { record, id, orderIndex, raw: toJson(record) };
}

const count = async (m: Awaited<ReturnType<typeof openPgMirror>>, sql: string) => Number((await m.db.query(sql)).rows[0]?.n);

describePg('PostgreSQL sink pages', () => {
  for (const detailed of [false, true]) {
    const kind = detailed ? 'DETAILED (a transaction)' : 'OVERALL (one statement)';
    it(`${kind}: rows and checkpoint commit together; a moved checkpoint writes nothing`, async () => {
      const m = await openPgMirror(PG_URL, freshSchema(), 1);
      try {
        const id = streamId('c1', 'role', detailed ? 'DETAILED' : 'OVERALL');
        await m.sink.openStream(id);
        const first = await commitNow(m.sink, id, [role('r1', 1n, detailed), role('r2', 2n, detailed)], { from: undefined, to: 2n });
        expect(first).toEqual({ inserted: 2, updated: 0 });
        expect(m.state.cursor(id)).toBe(2n);
        const row = (await m.db.query('SELECT cursor::text AS c, records::text AS n FROM sync_state WHERE stream = $1', [id.key])).rows[0];
        expect(row).toEqual({ c: '2', n: '2' });
        // A backfill page (no move) counts new records and leaves the cursor.
        expect(await commitNow(m.sink, id, [role('r0', 0n, detailed)], undefined)).toEqual({ inserted: 1, updated: 0 });
        expect(await count(m, 'SELECT records AS n FROM sync_state')).toBe(3);
        // Another process moved the checkpoint: the page is refused whole.
        await m.db.query('UPDATE sync_state SET cursor = 9 WHERE stream = $1', [id.key]);
        const err = await commitNow(m.sink, id, [role('r3', 3n, detailed)], { from: 2n, to: 3n }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StorageError);
        expect((err as Error).message).toMatch(/checkpoint of stream c1\/role\/\w+ is at 9, not at 2 where this process left it/);
        expect(await count(m, "SELECT count(*) AS n FROM role_results WHERE id = 'r3'")).toBe(0);
        expect(await count(m, 'SELECT count(*) AS n FROM score_details')).toBe(detailed ? 3 : 0);
        expect(await count(m, 'SELECT records AS n FROM sync_state')).toBe(3);
        expect(m.state.cursor(id)).toBe(2n);
      } finally {
        await m.release();
      }
    });
  }
});

/** The storage options of the tables that hold records' raw. */
async function tableOptions(m: Awaited<ReturnType<typeof openPgMirror>>, schema: string) {
  const sql =
    "SELECT relname, reloptions FROM pg_class WHERE relnamespace = $1::regnamespace AND relname IN ('session_results', 'role_results', 'score_details') ORDER BY relname";
  return (await m.db.query<{ relname: string; reloptions: string[] | null }>(sql, [schema])).rows;
}
const TARGET = ['role_results', 'score_details', 'session_results'].map((relname) => ({
  relname,
  reloptions: ['toast_tuple_target=8160'],
}));

describePg('PostgreSQL sink counts', () => {
  it('an OVERALL page (counts only come back) tells new, changed and unchanged records apart', async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const id = streamId('c1', 'role', 'OVERALL');
      await m.sink.openStream(id);
      expect(await commitNow(m.sink, id, [role('r1', 1n, false), role('r2', 2n, false)], undefined)).toEqual({ inserted: 2, updated: 0 });
      expect(await commitNow(m.sink, id, [role('r1', 1n, false), role('r2', 2n, false)], undefined)).toEqual({ inserted: 0, updated: 0 });
      const changed = role('r2', 2n, false);
      const record = { ...changed.record, overall_score: 4 };
      const page = [role('r1', 1n, false), { ...changed, record, raw: toJson(record) }, role('r3', 3n, false)];
      expect(await commitNow(m.sink, id, page, { from: undefined, to: 3n })).toEqual({ inserted: 1, updated: 1 });
      expect(await count(m, 'SELECT records AS n FROM sync_state')).toBe(3);
      expect(await count(m, "SELECT overall_score AS n FROM role_results WHERE id = 'r2'")).toBe(4);
    } finally {
      await m.release();
    }
  });
});

describePg('PostgreSQL storage of records', () => {
  it('keeps a record of a few KB inline and uncompressed, as SQLite does (schema 3), on a new mirror and a migrated one', async () => {
    const schema = freshSchema();
    const m = await openPgMirror(PG_URL, schema, 1);
    try {
      expect(await tableOptions(m, schema)).toEqual(TARGET);
      const id = streamId('c1', 'role', 'OVERALL');
      await m.sink.openStream(id);
      const record = { id: 'big', order_index: 1, overall_score: 3, notes: 'x'.repeat(3000) };
      await commitNow(m.sink, id, [{ record, id: 'big', orderIndex: 1n, raw: toJson(record) }], { from: undefined, to: 1n });
      const version = Number((await m.db.query('SHOW server_version_num')).rows[0]?.server_version_num);
      // pg_column_compression (PostgreSQL 14+): NULL for a value stored as it is.
      if (version >= 140000) {
        expect((await m.db.query("SELECT pg_column_compression(raw) AS c FROM role_results WHERE id = 'big'")).rows).toEqual([{ c: null }]);
      }
      // A schema-2 mirror gets the same setting when it is opened.
      for (const t of ['session_results', 'role_results', 'score_details']) await m.db.query(`ALTER TABLE ${t} RESET (toast_tuple_target)`);
      await m.db.query("UPDATE meta SET value = '2' WHERE key = 'schema_version'");
    } finally {
      await m.release();
    }
    const again = await openPgMirror(PG_URL, schema, 1);
    try {
      expect(await tableOptions(again, schema)).toEqual(TARGET);
    } finally {
      await again.release();
    }
  });
});
