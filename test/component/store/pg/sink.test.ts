/**
 * The PostgreSQL sink's pages (store/pg/sink.ts): a page's rows and its checkpoint's compare-and-set
 * commit together or not at all, both for a page of one statement (OVERALL role results: the
 * checkpoint is a CTE of the upsert, no BEGIN/COMMIT) and for a page in a transaction (DETAILED).
 */
import { expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import { type CheckedRecord, streamId } from '../../../../src/core/types.js';
import { LeaseLostError, StorageError } from '../../../../src/errors.js';
import { openPgMirror, type PgMirror } from '../../../../src/store/pg/open.js';
import { commitNow, describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { evalOf } from '../../../helpers/records.js';

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

function session(id: string, orderIndex: bigint, scores: number[]): CheckedRecord {
  const record = { id, order_index: Number(orderIndex), score: 1, eval_results: scores.map((n) => evalOf(n)) };
  return { record, id, orderIndex, raw: toJson(record) };
}

/** The statements the mirror's connections are sent from now on (each one round trip), by their first words. */
function sentBy(m: PgMirror): string[] {
  const sent: string[] = [];
  const seen = new WeakSet<object>();
  m.db.pool.on('acquire', (client) => {
    if (seen.has(client)) return;
    seen.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
      const q = args[0] as string | { text: string };
      sent.push((typeof q === 'string' ? q : q.text).replace(/\s+/g, ' ').slice(0, 30));
      return query(...args);
    };
  });
  return sent;
}

describePg('PostgreSQL sink round trips', () => {
  it("a page of session results is one statement with its eval results and the lease's fence: new and changed results get theirs, an unchanged one keeps its own", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const id = streamId('c1', 'session', null);
      await m.sink.openStream(id);
      const sent = sentBy(m);
      expect(await commitNow(m.sink, id, [session('s1', 1n, [1, 2]), session('s2', 2n, [3])], { from: undefined, to: 2n })).toEqual({
        inserted: 2,
        updated: 0,
      });
      expect(sent).toEqual([expect.stringMatching(/^WITH change_lock/)]);
      const page = [session('s1', 1n, [4]), session('s2', 2n, [3]), session('s3', 3n, [5, 6])];
      expect(await commitNow(m.sink, id, page, { from: 2n, to: 3n })).toEqual({ inserted: 1, updated: 1 });
      const evals = await m.db.query(
        "SELECT parent_id, evaluation_id FROM eval_results WHERE parent_type = 'session_result' ORDER BY 1, 2",
      );
      expect(evals.rows.map((r) => `${r.parent_id}:${r.evaluation_id}`)).toEqual(['s1:e4', 's2:e3', 's3:e5', 's3:e6']);
      expect(await count(m, 'SELECT records AS n FROM sync_state')).toBe(3);
    } finally {
      await m.release();
    }
  });

  it("a DETAILED page of new results is BEGIN, its results (with the lease's fence), its score details with their eval results, COMMIT", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const id = streamId('c1', 'role', 'DETAILED');
      await m.sink.openStream(id);
      const sent = sentBy(m);
      const detailed = (rid: string, n: bigint) => {
        const record = {
          id: rid,
          order_index: Number(n),
          score_details: [{ id: `${rid}-d`, score: 1, eval_results: [evalOf(1), evalOf(2)] }],
        };
        return { record, id: rid, orderIndex: n, raw: toJson(record) };
      };
      expect(await commitNow(m.sink, id, [detailed('r1', 1n), detailed('r2', 2n)], { from: undefined, to: 2n })).toEqual({
        inserted: 2,
        updated: 0,
      });
      expect(sent).toEqual([
        'BEGIN',
        expect.stringMatching(/^WITH change_lock/),
        expect.stringMatching(/^WITH d AS \(INSERT INTO score_d/),
        'COMMIT',
      ]);
      expect(await count(m, "SELECT count(*) AS n FROM eval_results WHERE parent_type = 'score_detail'")).toBe(4);
    } finally {
      await m.release();
    }
  });

  it("a stream's lease taken by another worker: a page of session results writes nothing, eval results included", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const id = streamId('c1', 'session', null);
      await m.sink.openStream(id);
      await m.db.query("UPDATE leases SET worker = 'other', token = nextval('lease_tokens') WHERE stream = $1", [id.key]);
      const err = await commitNow(m.sink, id, [session('s1', 1n, [1])], { from: undefined, to: 1n }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LeaseLostError);
      expect(await count(m, 'SELECT count(*) AS n FROM session_results')).toBe(0);
      expect(await count(m, 'SELECT count(*) AS n FROM eval_results')).toBe(0);
      expect(await count(m, 'SELECT count(*) AS n FROM change_times WHERE request_id IS NOT NULL OR seq > 1')).toBe(0);
      expect(m.state.cursor(id)).toBeUndefined();
    } finally {
      await m.release();
    }
  });

  it("a page's quarantined records are one statement, whatever their number; the same text twice is kept once", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const id = streamId('c1', 'role', 'OVERALL');
      await m.sink.openStream(id);
      const sent = sentBy(m);
      const bad = (n: number, raw = `{"id":"bad${n}"}`) => ({
        raw,
        reason: `record ${n} has no order_index`,
        recordId: `bad${n}`,
        orderIndex: undefined,
        after: undefined,
        since: undefined,
        until: undefined,
        position: n,
        requestId: 'req-1',
        at: '2026-01-02T00:00:00.000Z',
      });
      const add = [bad(1), bad(2), bad(3), bad(4, '{"id":"bad1"}')];
      await m.sink.commitPage(id, [role('r1', 1n, false)], { from: undefined, to: 1n }, { quarantine: { add } });
      await m.sink.settle(id);
      expect(sent.filter((q) => q.startsWith('INSERT INTO quarantine'))).toHaveLength(1);
      const rows = await m.db.query('SELECT record_id, request_id FROM quarantine ORDER BY record_id');
      expect(rows.rows).toEqual(['bad1', 'bad2', 'bad3'].map((record_id) => ({ record_id, request_id: 'req-1' })));
    } finally {
      await m.release();
    }
  });
});
