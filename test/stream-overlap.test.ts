/**
 * A stream keeps one page's commit in flight (sync/stream.ts): while a store over the network
 * (PostgreSQL) writes page N, page N+1 is read and checked and the request for page N+2 goes out. Page
 * N+1 reaches the sink only after page N's commit succeeded, so the checkpoint chain and
 * exactly-once are as before: a commit that fails stops the stream with that failure and nothing
 * after it is written; a stream that is stopped waits for the commit under way.
 */
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { StorageError } from '../src/errors.js';
import type { Sink } from '../src/store/sinks/sink.js';
import { runPass } from '../src/sync/pass.js';
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
    // Page 2 takes 5 s to come.
    origin
      .intercept({ path: (p) => p.includes('starting_after=2'), method: 'GET' })
      .reply(200, page(2))
      .delay(5000);
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
    const started = Date.now();
    const err = await runPass({ client: mockClient(agent), sink, state: store.state }, opts).catch((e: unknown) => e);
    expect(err).toBe(failure);
    expect(Date.now() - started).toBeLessThan(3000);
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
