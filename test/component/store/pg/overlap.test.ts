/**
 * The PostgreSQL sink's queue of a stream's pages (store/pg/page-queue.ts, statements.ts withTicket):
 * the stream hands page N+1 once commitPage resolved for page N, which may still be committing; two
 * one-statement pages are then written at once, but page N+1 commits only if page N did, the counts
 * come back in page order (commitPage: the page before's; settle: the last one's), and a failure
 * stops the stream's later writes. Against the real server: what is checked is the server's locking
 * (the ticket, the latest version of the checkpoint row), not a model of it.
 */
import { expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import { type CheckedRecord, type QuarantinedRecord, streamId } from '../../../../src/core/types.js';
import { LeaseLostError, StorageError } from '../../../../src/errors.js';
import { openPgMirror, type PgMirror } from '../../../../src/store/pg/open.js';
import { overlaps } from '../../../../src/store/pg/page-queue.js';
import { planPage } from '../../../../src/store/pg/upserts.js';
import { describePg, freshSchema, PG_URL, pgClient } from '../../../helpers/pg.js';

/** Runs `fn` with the URL of a role of its own whose defaults are `settings` (ALTER ROLE … SET), then drops it. */
async function withRole(settings: Record<string, string>, fn: (url: string) => Promise<void>): Promise<void> {
  const name = `r_${process.pid}_${Date.now().toString(36)}`;
  const admin = await pgClient();
  const url = new URL(PG_URL);
  const database = decodeURIComponent(url.pathname.slice(1)) || 'postgres';
  try {
    await admin.query(`CREATE ROLE ${name} LOGIN PASSWORD 'pw'`);
    await admin.query(`GRANT CREATE ON DATABASE "${database}" TO ${name}`);
    for (const [k, v] of Object.entries(settings)) await admin.query(`ALTER ROLE ${name} SET ${k} = '${v}'`);
    url.username = name;
    url.password = 'pw';
    await fn(url.toString());
  } finally {
    await admin.query(`DROP OWNED BY ${name} CASCADE`).catch(() => {});
    await admin.query(`REVOKE CREATE ON DATABASE "${database}" FROM ${name}`).catch(() => {});
    await admin.query(`DROP ROLE IF EXISTS ${name}`).catch(() => {});
    await admin.end();
  }
}

function role(id: string, orderIndex: bigint, detailed = false): CheckedRecord {
  const record: Record<string, unknown> = { id, order_index: Number(orderIndex), overall_score: 3 };
  if (detailed) record.score_details = [{ id: `${id}-d`, score: 1, eval_results: [] }];
  return { record, id, orderIndex, raw: toJson(record) };
}

/** What commitPage resolves with when no page before it was under way. */
const NONE = { inserted: 0, updated: 0 };
const TWO = { inserted: 2, updated: 0 };

const page = (first: number, n = 2) => Array.from({ length: n }, (_, k) => role(`r${first + k}`, BigInt(first + k)));

/** A trigger in the mirror's schema: inserting `boom` fails, inserting `slow` takes `ms`. */
async function trap(m: PgMirror, ms: number): Promise<void> {
  await m.db.query(`CREATE FUNCTION ${m.db.schema}.trap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 'boom' THEN RAISE EXCEPTION 'boom refused (test)'; END IF;
  IF NEW.id = 'slow' THEN PERFORM pg_sleep(${ms / 1000}); END IF;
  RETURN NEW;
END $$`);
  await m.db.query(`CREATE TRIGGER trap BEFORE INSERT ON role_results FOR EACH ROW EXECUTE FUNCTION ${m.db.schema}.trap()`);
}

const state = async (m: PgMirror, key: string) =>
  (await m.db.query('SELECT cursor::text AS cursor, records::text AS records FROM sync_state WHERE stream = $1', [key])).rows[0];
const ids = async (m: PgMirror) => (await m.db.query('SELECT id FROM role_results ORDER BY order_index')).rows.map((r) => r.id);

/** Advisory locks waited for, not granted: a page at its wait for the page before it. */
const waiting = async (m: PgMirror, locktype = 'advisory') =>
  Number((await m.db.query('SELECT count(*) AS n FROM pg_locks WHERE locktype = $1 AND NOT granted', [locktype])).rows[0]?.n);

/**
 * Pages of `stream` in this mirror's schema waiting for a page ticket (store/pg/statements.ts
 * withTicket): the ticket's high 32 bits are the lock's classid. Other tests' tickets on the same
 * server are not counted.
 */
const waitingTickets = async (m: PgMirror, stream: string) =>
  Number(
    (
      await m.db.query(
        `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
           AND classid = (hashtext('campaign-sync page ' || $2::text || ' ' || $1::text)::bigint & 4294967295)::text::oid`,
        [stream, m.db.schema],
      )
    ).rows[0]?.n,
  );

describePg('PostgreSQL: two pages of a stream written at once', () => {
  const id = streamId('c1', 'role', 'OVERALL');

  it('page N+1 is written while page N commits, waits for it, and both commit in page order', async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await trap(m, 2000);
      await m.sink.openStream(id);
      // Pages 1 and 2 are under way when their calls resolve.
      expect(await m.sink.commitPage(id, [role('slow', 1n), role('r2', 2n)], { from: undefined, to: 2n })).toEqual(NONE);
      expect(await m.sink.commitPage(id, page(3), { from: 2n, to: 4n })).toEqual(NONE);
      // Page 2 has written its rows and waits for page 1's ticket while page 1 is still writing.
      let seen = 0;
      for (let i = 0; i < 150 && seen === 0; i++) {
        seen = await waitingTickets(m, id.key);
        if (seen === 0) await new Promise((r) => setTimeout(r, 10));
      }
      expect(seen).toBe(1);
      // Page 3's call waits for page 1 to commit (two pages under way at most) and gives its counts;
      // settle gives those of pages 2 and 3.
      let committedFirst: unknown;
      expect(
        await m.sink.commitPage(id, page(5), { from: 4n, to: 6n }).then(async (c) => {
          committedFirst = m.state.cursor(id);
          return c;
        }),
      ).toEqual(TWO);
      expect(committedFirst === 2n || committedFirst === 4n).toBe(true);
      expect(await m.sink.settle(id)).toEqual({ inserted: 4, updated: 0 });
      expect(await ids(m)).toEqual(['slow', 'r2', 'r3', 'r4', 'r5', 'r6']);
      expect(await state(m, id.key)).toEqual({ cursor: '6', records: '6' });
      expect(m.state.cursor(id)).toBe(6n);
    } finally {
      await m.release();
    }
  });

  it("page N fails: page N+1, already under way, writes nothing and fails with page N's failure", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await trap(m, 0);
      await m.sink.openStream(id);
      await m.sink.commitPage(id, page(1), { from: undefined, to: 2n });
      expect(await m.sink.settle(id)).toEqual(TWO);
      expect(await m.sink.commitPage(id, [role('r3', 3n), role('boom', 4n)], { from: 2n, to: 4n })).toEqual(NONE);
      // Page N+1 is handed, and written alongside.
      expect(await m.sink.commitPage(id, page(5), { from: 4n, to: 6n })).toEqual(NONE);
      // The next call throws page N's failure, once page N+1 has ended, and writes nothing; so do the later ones.
      const e1 = await m.sink.commitPage(id, page(7), { from: 6n, to: 8n }).catch((e: unknown) => e);
      expect(e1).toBeInstanceOf(StorageError);
      expect((e1 as Error).message).toMatch(/boom refused \(test\)/);
      expect(await m.sink.settle(id).catch((e: unknown) => e)).toBe(e1);
      expect(await m.sink.commitPage(id, page(9), { from: 8n, to: 10n }).catch((e: unknown) => e)).toBe(e1);
      expect(await ids(m)).toEqual(['r1', 'r2']);
      expect(await state(m, id.key)).toEqual({ cursor: '2', records: '2' });
      expect(m.state.cursor(id)).toBe(2n);
    } finally {
      await m.release();
    }
  });

  it('page N+1 that reaches its checkpoint before page N has started is written again once page N is in', async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await m.sink.openStream(id);
      // Page 1 waits 300 ms for its connection: page 2 takes page 1's ticket before page 1 does,
      // finds the checkpoint not yet moved, and is refused; the sink writes it again after page 1.
      // A one-statement page is its own transaction, on a connection of the session's.
      const session = m.db.session.bind(m.db);
      let calls = 0;
      m.db.session = async (fn, what) => {
        if (++calls === 1) await new Promise((r) => setTimeout(r, 300));
        return session(fn, what);
      };
      expect(await m.sink.commitPage(id, page(1), { from: undefined, to: 2n })).toEqual(NONE);
      expect(await m.sink.commitPage(id, page(3), { from: 2n, to: 4n })).toEqual(NONE);
      expect(await m.sink.settle(id)).toEqual({ inserted: 4, updated: 0 });
      expect(calls).toBe(3);
      expect(await ids(m)).toEqual(['r1', 'r2', 'r3', 'r4']);
      expect(await state(m, id.key)).toEqual({ cursor: '4', records: '4' });
      expect(m.state.cursor(id)).toBe(4n);
    } finally {
      await m.release();
    }
  });

  it('another process that moved the checkpoint is still a conflict, page N+1 under way or not', async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await m.sink.openStream(id);
      await m.sink.commitPage(id, page(1), { from: undefined, to: 2n });
      await m.sink.settle(id);
      await m.db.query('UPDATE sync_state SET cursor = 9 WHERE stream = $1', [id.key]);
      expect(await m.sink.commitPage(id, page(3), { from: 2n, to: 4n })).toEqual(NONE);
      expect(await m.sink.commitPage(id, page(5), { from: 4n, to: 6n })).toEqual(NONE);
      const e1 = await m.sink.settle(id).catch((e: unknown) => e);
      expect((e1 as Error).message).toMatch(/checkpoint of stream c1\/role\/OVERALL is at 9, not at 2 where this process left it/);
      expect(await m.sink.commitPage(id, page(7), { from: 6n, to: 8n }).catch((e: unknown) => e)).toBe(e1);
      expect(await ids(m)).toEqual(['r1', 'r2']);
      expect(await state(m, id.key)).toEqual({ cursor: '9', records: '2' });
    } finally {
      await m.release();
    }
  });

  it('overlaps: only one-statement pages with no record in common', () => {
    const plan = (records: CheckedRecord[]) => planPage('role', records, 'c1', 'OVERALL');
    expect(overlaps(plan(page(1)), plan(page(3)))).toBe(true);
    // A record in both: page N+1 would wait for page N's row while page N waits for page N+1's ticket chain.
    expect(overlaps(plan(page(1)), plan(page(2)))).toBe(false);
    // A DETAILED page is a transaction of several statements: never overlapped.
    expect(overlaps(plan(page(1)), plan([role('d1', 3n, true)]))).toBe(false);
    expect(overlaps(plan([role('d1', 1n, true)]), plan(page(3)))).toBe(false);
    expect(overlaps(undefined, plan(page(3)))).toBe(false);
  });

  for (const [setting, value] of [
    ['default_transaction_isolation', 'repeatable read'],
    ['lock_timeout', '50ms'],
  ] as const) {
    it(`a role whose ${setting} is ${value} still writes two pages at once`, async () => {
      await withRole({ [setting]: value }, async (url) => {
        const m = await openPgMirror(url, freshSchema(), 1);
        try {
          await trap(m, 400);
          await m.sink.openStream(id);
          expect(await m.sink.commitPage(id, [role('slow', 1n), role('r2', 2n)], { from: undefined, to: 2n })).toEqual(NONE);
          expect(await m.sink.commitPage(id, page(3), { from: 2n, to: 4n })).toEqual(NONE);
          expect(await m.sink.settle(id)).toEqual({ inserted: 4, updated: 0 });
          expect(await state(m, id.key)).toEqual({ cursor: '4', records: '4' });
        } finally {
          await m.release();
        }
      });
    });
  }

  it("an OVERALL page's quarantined records and new drift commit in its transaction: refused by its checkpoint, none is written", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    const held: QuarantinedRecord = {
      raw: '{"id":"bad"}',
      reason: 'no order_index (test)',
      recordId: 'bad',
      orderIndex: undefined,
      after: 2n,
      since: undefined,
      until: undefined,
      position: 3,
      requestId: undefined,
      at: '2026-01-01T00:00:00.000Z',
    };
    const extras = {
      quarantine: { add: [held] },
      drift: { items: [{ kind: 'field' as const, value: 'new_field', recordId: 'r3' }], report: true },
    };
    const kept = async (x: PgMirror) => ({
      quarantined: (await x.db.query('SELECT record_id FROM quarantine')).rows.map((r) => r.record_id),
      drift: (await x.db.query('SELECT value FROM drift_seen')).rows.map((r) => r.value),
    });
    try {
      await m.sink.openStream(id);
      await m.sink.commitPage(id, page(1), { from: undefined, to: 2n });
      await m.sink.settle(id);
      // Another process moved the checkpoint: the page, its quarantined record and its drift are refused together.
      await m.db.query('UPDATE sync_state SET cursor = 9 WHERE stream = $1', [id.key]);
      await m.sink.commitPage(id, page(3), { from: 2n, to: 4n }, extras);
      expect(await m.sink.settle(id).catch((e: unknown) => e)).toBeInstanceOf(StorageError);
      expect(await ids(m)).toEqual(['r1', 'r2']);
      expect(await kept(m)).toEqual({ quarantined: [], drift: [] });
    } finally {
      await m.release();
    }
    const n = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await n.sink.openStream(id);
      await n.sink.commitPage(id, page(1), { from: undefined, to: 2n });
      await n.sink.commitPage(id, page(3), { from: 2n, to: 4n }, extras);
      expect(await n.sink.settle(id)).toEqual(TWO);
      expect(await ids(n)).toEqual(['r1', 'r2', 'r3', 'r4']);
      expect(await kept(n)).toEqual({ quarantined: ['bad'], drift: ['new_field'] });
    } finally {
      await n.release();
    }
  });

  it('a page chosen as a deadlock victim (another writer of the same rows) is written again', async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    const other = await pgClient();
    try {
      await m.sink.openStream(id);
      await other.query(`SET search_path TO ${m.db.schema}`);
      // Another writer holds r2 and will want r1; the page takes r1, then waits for r2: a cycle.
      await other.query('BEGIN');
      await other.query("INSERT INTO role_results (id, campaign_id, order_index, raw) VALUES ('r2', 'c1', 2, '{}')");
      expect(await m.sink.commitPage(id, page(1), { from: undefined, to: 2n })).toEqual(NONE);
      for (let i = 0; i < 100 && (await waiting(m, 'transactionid')) === 0; i++) await new Promise((r) => setTimeout(r, 10));
      // Waits on the page's r1 until the server breaks the cycle (deadlock_timeout, 1 s): the page's
      // statement, waiting longer, is the one it cancels; then this writer gives up its rows.
      const mine = other
        .query("INSERT INTO role_results (id, campaign_id, order_index, raw) VALUES ('r1', 'c1', 1, '{}')")
        .catch((e: unknown) => e);
      await mine;
      await other.query('ROLLBACK');
      expect(await m.sink.settle(id)).toEqual(TWO);
      expect(await ids(m)).toEqual(['r1', 'r2']);
      expect(await state(m, id.key)).toEqual({ cursor: '2', records: '2' });
    } finally {
      await other.end();
      await m.release();
    }
  });

  it("a stream's lease taken by another worker: the next page writes nothing and fails with one line, the sink stays usable, and the stream's pages commit once it holds the lease again", async () => {
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      await m.sink.openStream(id);
      await m.sink.commitPage(id, page(1), { from: undefined, to: 2n });
      await m.sink.settle(id);
      // Another worker's takeover, as after this one stopped renewing: a new holder and token.
      await m.db.query("UPDATE leases SET worker = 'other', token = nextval('lease_tokens') WHERE stream = $1", [id.key]);
      // Each failure is the stream's, reported at settle: the next page starts afresh, and is refused by its own fence.
      for (const single of [true, false]) {
        const records = single ? page(3) : [role('r3', 3n, true), role('r4', 4n, true)];
        const err = await m.sink
          .commitPage(id, records, { from: 2n, to: 4n })
          .then(() => m.sink.settle(id))
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(err).toBeInstanceOf(LeaseLostError);
        expect((err as Error).message).toMatch(/^stream .*: this worker lost its lease .* this page was not written$/);
      }
      expect(await ids(m)).toEqual(['r1', 'r2']);
      expect(await state(m, id.key)).toEqual({ cursor: '2', records: '2' });
      expect(m.sink.failure).toBeUndefined();
      // The other worker lets the stream go and this one takes it again (a later pass): its pages commit.
      await m.db.query('UPDATE leases SET worker = NULL, expires_at = clock_timestamp() WHERE stream = $1', [id.key]);
      expect(await m.sink.leases.claim(id.key, 'infinity')).toBe('taken');
      await m.sink.commitPage(id, page(3), { from: 2n, to: 4n });
      expect(await m.sink.settle(id)).toEqual(TWO);
      await m.sink.flush();
      expect(await ids(m)).toEqual(['r1', 'r2', 'r3', 'r4']);
      expect(await state(m, id.key)).toEqual({ cursor: '4', records: '4' });
    } finally {
      await m.release();
    }
  });
});
