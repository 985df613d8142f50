/**
 * A stream keeps one page's commit in flight (sync/stream.ts): while a store over the network
 * (PostgreSQL) writes page N, page N+1 is read and checked and the request for page N+2 goes out. Page
 * N+1 reaches the sink only after page N's commit succeeded, so the checkpoint chain and
 * exactly-once hold as without the overlap: a commit that fails stops the stream with that failure and nothing
 * after it is written; a stream that is stopped waits for the commit under way. A sink that says two
 * pages may overlap (Sink.overlaps) gets page N+1 while page N commits, two at most, and the stream
 * still counts them and moves its checkpoint in page order.
 */
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { streamId } from '../src/core/types.js';
import { StorageError } from '../src/errors.js';
import type { Sink } from '../src/store/sinks/sink.js';
import { runPass } from '../src/sync/pass.js';
import { walkStream } from '../src/sync/stream.js';
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
} from './helpers/mock.js';

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
function slowSink(sink: Sink, before: (page: number) => Promise<void>) {
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

  it("builds page N+1's rows (the sink's prepare) while page N commits, and hands them to its commit", async () => {
    const { agent, calls } = service();
    const store = testStore();
    const log: string[] = [];
    let page = 0;
    const sink = withCommitPage(store.sink, async (id, records, move, prepared) => {
      const n = ++page;
      log.push(`commit ${n} with ${String(prepared)}`);
      // Page n+1 is read and prepared while this commit is under way.
      await until(() => log.includes(`prepare ${n + 1}`) || resultRequests(calls) >= PAGES, 2000);
      const counts = await store.sink.commitPage(id, records, move);
      log.push(`end ${n}`);
      return counts;
    });
    let prepares = 0;
    sink.prepare = (_id, records) => {
      log.push(`prepare ${++prepares}`);
      return `plan of ${records.length}`;
    };
    const result = await runPass({ client: mockClient(agent), sink, state: store.state }, opts);
    expect(result.streams[0]?.records).toBe(PAGES * PAGE);
    expect(log.slice(0, 5)).toEqual(['prepare 1', 'commit 1 with plan of 2', 'prepare 2', 'end 1', 'commit 2 with plan of 2']);
    expect(log.filter((l) => l.startsWith('commit')).every((l) => l.endsWith('with plan of 2'))).toBe(true);
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
 * `store.sink` that says any two pages may overlap (Sink.overlaps), as the PostgreSQL sink does for
 * one-statement pages: each commitPage first runs `before(n)`; the pages then reach the store in page
 * order, and a page whose predecessor failed is refused with that failure (the PostgreSQL ticket's
 * rule), so the store's own compare-and-set sees the chain it expects.
 */
function overlappingSink(sink: Sink, before: (page: number) => Promise<void>, after: (page: number) => Promise<void> = async () => {}) {
  let page = 0;
  let inFlight = 0;
  let most = 0;
  const log: string[] = [];
  // Settles once the last page handed in is stored (or refused): its answer may come later (`after`).
  let stored: Promise<unknown> = Promise.resolve();
  const wrapped = withCommitPage(sink, (...args) => {
    const n = ++page;
    inFlight++;
    most = Math.max(most, inFlight);
    log.push(`start ${n}${inFlight > 1 ? ' (overlapping)' : ''}`);
    const prior = stored;
    const store = (async () => {
      await before(n);
      await prior;
      return sink.commitPage(...args);
    })();
    stored = store;
    return (async () => {
      try {
        const counts = await store;
        await after(n);
        return counts;
      } finally {
        inFlight--;
        log.push(`end ${n}`);
      }
    })();
  });
  wrapped.overlaps = () => true;
  return { sink: wrapped, log, most: () => most };
}

describe('a stream whose sink lets two pages overlap (PostgreSQL, one-statement pages)', () => {
  it('hands page N+1 while page N commits, never more than two at once, and stores every page once', async () => {
    const { agent } = service();
    const store = testStore();
    const { sink, log, most } = overlappingSink(store.sink, async (n) => {
      // Each commit waits (up to 2 s) for the next page to be handed in while it is under way.
      if (n < PAGES) await until(() => log.includes(`start ${n + 1} (overlapping)`), 2000);
    });
    const result = await runPass({ client: mockClient(agent), sink, state: store.state }, opts);
    const stream = result.streams[0];
    expect(stream?.status).toBe('ok');
    expect(log.filter((l) => l.includes('overlapping'))).toHaveLength(PAGES - 1);
    expect(most()).toBe(2);
    expect(stream?.records).toBe(PAGES * PAGE);
    expect(stream?.inserted).toBe(PAGES * PAGE);
    expect(stream?.cursor).toBe(BigInt(PAGES * PAGE));
    expect(store.db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(PAGES * PAGE);
    expect(store.db.prepare('SELECT cursor, records FROM sync_state').get()).toEqual({ cursor: PAGES * PAGE, records: PAGES * PAGE });
  });

  it('counts pages and moves its checkpoint in page order, even when page N+1 answers before page N', async () => {
    const { agent } = service();
    const store = testStore();
    // Page n answers 120 ms after its commit, page n+1 at once: without the chain, the walk would
    // count page n+1 first and end on page n's checkpoint.
    const { sink } = overlappingSink(
      store.sink,
      async () => {},
      async (n) => {
        if (n % 2 === 1) await new Promise((r) => setTimeout(r, 120));
      },
    );
    const id = streamId(CAMPAIGN, 'session', null);
    await sink.openStream(id);
    const client = mockClient(agent);
    const pages: bigint[] = [];
    const counts = { records: 0, inserted: 0, updated: 0, pages: 0, requests: 0, bytes: 0 };
    const end = await walkStream(
      id,
      { client, sink, state: store.state },
      { pageSize: PAGE, reportType: 'DETAILED' },
      { from: undefined, window: {}, checkpoint: true, onPage: (records) => pages.push(records.at(-1)?.orderIndex ?? -1n) },
      counts,
      { records: 0, requests: 0 } as never,
      undefined,
    );
    expect(pages).toEqual([2n, 4n, 6n, 8n, 10n]);
    expect(end).toBe(BigInt(PAGES * PAGE));
    expect(counts.records).toBe(PAGES * PAGE);
    await client.close();
  });

  it("page N's failure stops the stream with that failure; page N+1, already handed in, is waited for and not stored", async () => {
    const { agent } = service();
    const store = testStore();
    const failure = new StorageError('cannot write to the mirror: disk full (test)');
    const { sink, log } = overlappingSink(store.sink, async (n) => {
      // Page 3's commit takes 200 ms more: the pass must wait for it all the same.
      if (n === 3) await new Promise((r) => setTimeout(r, 200));
      if (n !== 2) return;
      // Page 3 is handed in while page 2 is under way, then page 2 fails.
      await until(() => log.includes('start 3 (overlapping)'), 2000);
      throw failure;
    });
    const err = await runPass({ client: mockClient(agent), sink, state: store.state }, opts).catch((e: unknown) => e);
    expect(err).toBe(failure);
    expect(log).toContain('start 3 (overlapping)');
    expect(log.indexOf('start 3 (overlapping)')).toBeLessThan(log.indexOf('end 2'));
    // Page 3's commit ended before the pass did, and was refused (page 2 failed before it).
    expect(log.filter((l) => l.startsWith('end')).sort()).toEqual(['end 1', 'end 2', 'end 3']);
    expect(log).not.toContain('start 4 (overlapping)');
    expect(store.db.prepare('SELECT order_index FROM session_results ORDER BY order_index').pluck().all()).toEqual([1, 2]);
    expect(store.db.prepare('SELECT cursor FROM sync_state').pluck().get()).toBe(2);
  });
});
