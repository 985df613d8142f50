/**
 * A stream keeps one page's commit in flight (sync/stream.ts): while a store over the network
 * (PostgreSQL) writes page N, page N+1 is read and checked and the request for page N+2 goes out. Page
 * N+1 reaches the sink only once its commitPage for page N resolved, so the checkpoint chain and
 * exactly-once hold as without the overlap: a commit that fails stops the stream with that failure and
 * nothing after it is written; a stream that is stopped waits for the commit under way. A sink that
 * queues pages (PostgreSQL) resolves commitPage before the page commits: the stream chains the
 * checkpoint moves all the same, counts what the sink reports, and stops at the failure it reports.
 */
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { type CheckpointMove, streamId } from '../../../src/core/types.js';
import { StorageError } from '../../../src/errors.js';
import type { PageSink } from '../../../src/store/port.js';
import { runPass } from '../../../src/sync/pass.js';
import { emptyCounts, walkStream } from '../../../src/sync/stream.js';
import {
  CAMPAIGN,
  campaignList,
  mockClient,
  mockService,
  ORIGIN,
  passDefaults,
  sessionRecord,
  testStore,
  withCommitPage,
} from '../../helpers/mock.js';

const PAGES = 5;
const PAGE = 2;

/** A session campaign of PAGES full pages of PAGE records (order_index 1…10), enveloped. */
function service() {
  return mockService((url) => {
    if (url.pathname === '/v1/campaigns') return { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }) };
    const after = Number(url.searchParams.get('starting_after') ?? 0);
    const data = [1, 2].map((k) => sessionRecord(after + k)).filter((r) => Number(r.order_index) <= PAGES * PAGE);
    return { body: { data, has_more: after + PAGE < PAGES * PAGE, last_record_index: after + data.length } };
  });
}

/** Results requests sent so far. */
const resultRequests = (calls: URL[]) => calls.filter((u) => u.pathname !== '/v1/campaigns').length;

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

/** `sink` whose commitPage first runs `before(page number)`, asynchronously, as a networked store would. */
function slowSink(sink: PageSink, before: (page: number) => Promise<void>) {
  let page = 0;
  let inFlight = 0;
  const log: string[] = [];
  const wrapped = withCommitPage(sink, async (...args) => {
    const n = ++page;
    inFlight++;
    log.push(`start ${n}${inFlight > 1 ? ' (overlapping)' : ''}`);
    try {
      await before(n);
      return await sink.commitPage(...args);
    } finally {
      inFlight--;
      log.push(`end ${n}`);
    }
  });
  return { sink: wrapped, log };
}

const opts = { ...passDefaults, pageSize: PAGE, concurrency: 1 };

describe('a stream reads ahead while a page commits', () => {
  it('asks for page N+2 while page N is being written, and hands page N+1 to the sink only after it', async () => {
    const { agent, calls } = service();
    const store = testStore();
    const seen: boolean[] = [];
    // Each commit waits (up to 2 s) for the request of the page after next: it only comes if the
    // stream went on reading while this commit was under way.
    const { sink, log } = slowSink(store.sink, async (n) => {
      seen.push(await until(() => resultRequests(calls) >= Math.min(n + 2, PAGES), 2000));
    });
    const result = await runPass({ client: mockClient(agent), sink, state: store.state }, opts);
    expect(result.streams[0]?.status).toBe('ok');
    expect(seen).toEqual([true, true, true, true, true]);
    expect(log.some((l) => l.includes('overlapping'))).toBe(false);
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3', 'start 4', 'end 4', 'start 5', 'end 5']);
    expect(result.streams[0]?.records).toBe(PAGES * PAGE);
    expect(result.streams[0]?.inserted).toBe(PAGES * PAGE);
    expect(store.state.cursor(result.streams[0]!.id)).toBe(BigInt(PAGES * PAGE));
    expect(store.db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(PAGES * PAGE);
  });

  it('a commit that fails stops the stream with that failure: the page read meanwhile is never written', async () => {
    const { agent, calls } = service();
    const store = testStore();
    const failure = new StorageError('cannot write to the mirror: disk full (test)');
    const { sink, log } = slowSink(store.sink, async (n) => {
      // Page 3 is read and checked (and page 4 asked for) before page 2's commit fails.
      if (n === 2) {
        await until(() => resultRequests(calls) >= 4, 2000);
        throw failure;
      }
    });
    const err = await runPass({ client: mockClient(agent), sink, state: store.state }, opts).catch((e: unknown) => e);
    expect(err).toBe(failure);
    expect(resultRequests(calls)).toBeGreaterThanOrEqual(4);
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    // Page 1 only, and the checkpoint at its end.
    expect(store.db.prepare('SELECT order_index FROM session_results ORDER BY order_index').pluck().all()).toEqual([1, 2]);
    expect(store.db.prepare('SELECT cursor FROM sync_state').pluck().get()).toBe(2);
  });

  it('a commit that fails while the next page is slow to come stops the stream at once', async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    const origin = agent.get(ORIGIN);
    const page = (after: number) =>
      JSON.stringify({ data: [sessionRecord(after + 1), sessionRecord(after + 2)], has_more: true, last_record_index: after + 2 });
    // Page 2 never comes within the test's time: a pass that waited for it would time the test out.
    origin
      .intercept({ path: (p) => p.includes('starting_after=2'), method: 'GET' })
      .reply(200, page(2))
      .delay(10 * 60_000);
    origin
      .intercept({ path: () => true, method: 'GET' })
      .reply((opts) => {
        const url = new URL(opts.path, ORIGIN);
        const body =
          url.pathname === '/v1/campaigns' ? JSON.stringify(campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' })) : page(0);
        return { statusCode: 200, data: body, responseOptions: { headers: { 'content-type': 'application/json' } } };
      })
      .persist();
    const store = testStore();
    const failure = new StorageError('cannot write to the mirror: disk full (test)');
    const { sink } = slowSink(store.sink, async () => {
      await new Promise((r) => setTimeout(r, 50));
      throw failure;
    });
    const err = await runPass({ client: mockClient(agent), sink, state: store.state }, opts).catch((e: unknown) => e);
    expect(err).toBe(failure);
    expect(store.db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(0);
    await agent.close();
  });

  it('a stream stopped during a commit waits for it, and reports what was stored', async () => {
    const { agent } = service();
    const store = testStore();
    const controller = new AbortController();
    const { sink, log } = slowSink(store.sink, async (n) => {
      if (n !== 2) return;
      controller.abort();
      await new Promise((r) => setTimeout(r, 100));
    });
    const result = await runPass(
      { client: mockClient(agent, {}, { signal: controller.signal }), sink, state: store.state, signal: controller.signal },
      opts,
    );
    const stream = result.streams[0];
    expect(stream?.status).toBe('interrupted');
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    const stored = store.db.prepare('SELECT count(*) FROM session_results').pluck().get();
    expect(stored).toBe(2 * PAGE);
    expect(stream?.records).toBe(stored);
    expect(stream?.cursor).toBe(BigInt(2 * PAGE));
  });
});

/**
 * `store.sink` behind a queue, as the PostgreSQL sink keeps one (store/pg/page-queue.ts): commitPage
 * resolves once the page is queued, with the counts of the pages that committed meanwhile; the pages
 * are stored in order, each first running `before(n)`, and none after a failure, which the stream's
 * next call (commitPage or settle) throws.
 */
function queueingSink(sink: PageSink, before: (page: number) => Promise<void>) {
  let page = 0;
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown;
  let done = { inserted: 0, updated: 0 };
  const log: string[] = [];
  const moves: Array<CheckpointMove | undefined> = [];
  const report = () => {
    if (failure !== undefined) throw failure;
    const counts = done;
    done = { inserted: 0, updated: 0 };
    return counts;
  };
  const wrapped = withCommitPage(sink, async (id, records, move) => {
    const counts = report();
    const n = ++page;
    log.push(`queued ${n}`);
    moves.push(move);
    chain = chain.then(async () => {
      if (failure !== undefined) return;
      try {
        await before(n);
        const c = await sink.commitPage(id, records, move);
        log.push(`stored ${n}`);
        done = { inserted: done.inserted + c.inserted, updated: done.updated + c.updated };
      } catch (err) {
        failure = err;
      }
    });
    return counts;
  });
  wrapped.settle = async (id) => {
    await chain;
    await sink.settle(id);
    return report();
  };
  return { sink: wrapped, log, moves };
}

describe('a stream whose sink queues its pages (PostgreSQL)', () => {
  it('hands page N+1 while page N is still queued, chains the checkpoint moves, and counts every page once', async () => {
    const { agent } = service();
    const store = testStore();
    const { sink, log, moves } = queueingSink(store.sink, async (n) => {
      // Each page waits (up to 2 s) for the next one to be handed in while it is queued.
      if (n < PAGES) await until(() => log.includes(`queued ${n + 1}`), 2000);
    });
    const id = streamId(CAMPAIGN, 'session', null);
    await sink.openStream(id);
    const client = mockClient(agent);
    const counts = emptyCounts();
    const walk = { from: undefined, window: {}, checkpoint: true };
    const end = await walkStream(
      id,
      { client, sink, state: store.state },
      { pageSize: PAGE, reportType: 'DETAILED' },
      walk,
      counts,
      {
        records: 0,
        requests: 0,
      } as never,
      undefined,
    );
    expect(log.indexOf('queued 2')).toBeLessThan(log.indexOf('stored 1'));
    expect(log.filter((l) => l.startsWith('stored'))).toEqual(['stored 1', 'stored 2', 'stored 3', 'stored 4', 'stored 5']);
    // Each move starts where the one before ends, though that page was only queued when handed.
    expect(moves).toEqual([2, 4, 6, 8, 10].map((to) => ({ from: to === 2 ? undefined : BigInt(to - 2), to: BigInt(to) })));
    expect(end).toBe(BigInt(PAGES * PAGE));
    expect(counts).toMatchObject({ records: PAGES * PAGE, inserted: PAGES * PAGE, pages: PAGES });
    expect(store.db.prepare('SELECT cursor, records FROM sync_state').get()).toEqual({ cursor: PAGES * PAGE, records: PAGES * PAGE });
    await client.close();
  });

  it('a failure the sink reports at the next call stops the stream with it: no later page is handed', async () => {
    const { agent } = service();
    const store = testStore();
    const failure = new StorageError('cannot write to the mirror: disk full (test)');
    const { sink, log } = queueingSink(store.sink, async (n) => {
      if (n !== 2) return;
      // Page 3 is handed in before page 2's commit fails.
      await until(() => log.includes('queued 3'), 2000);
      throw failure;
    });
    const err = await runPass({ client: mockClient(agent), sink, state: store.state }, opts).catch((e: unknown) => e);
    expect(err).toBe(failure);
    expect(log).toContain('queued 3');
    // Nothing after page 1 is stored.
    expect(log.filter((l) => l.startsWith('stored'))).toEqual(['stored 1']);
    expect(store.db.prepare('SELECT order_index FROM session_results ORDER BY order_index').pluck().all()).toEqual([1, 2]);
    expect(store.db.prepare('SELECT cursor FROM sync_state').pluck().get()).toBe(2);
  });
});
