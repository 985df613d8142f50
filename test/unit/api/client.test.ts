import { type Dispatcher, MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiError, AuthError, exitCodeForPass, NetworkError } from '../../../src/errors.js';
import { runPass } from '../../../src/sync/pass.js';
import { fakeClock } from '../../helpers/clock.js';
import {
  CAMPAIGN,
  campaignList,
  mockClient,
  mockService,
  pass,
  passDefaults,
  ROLE_CAMPAIGN,
  sessionRecord,
  testStore,
} from '../../helpers/mock.js';

const sessionCampaign = () => campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' });

/** A mock service with one session campaign whose pages come from `pages(startingAfter)`. */
function service(pages: (after: string | null, url: URL) => { status?: number; body?: unknown; headers?: Record<string, string> }) {
  return mockService((url) => {
    if (url.pathname === '/v1/campaigns') return { body: sessionCampaign() };
    return pages(url.searchParams.get('starting_after'), url);
  });
}

describe('client: int64 and envelope variants', () => {
  it('keeps order_index past 2^53 exact: cursor sent, column stored, checkpoint', async () => {
    const big = 9007199254740993n; // 2^53 + 1: a double cannot hold it
    const { agent, calls } = service((after) => {
      if (after === null)
        return {
          body: `{"data":[${JSON.stringify(sessionRecord(0, 'a')).replace('"order_index":0', `"order_index":${big}`)}],"has_more":true,"last_record_index":${big}}`,
        };
      return { body: { data: [], has_more: false, last_record_index: null } };
    });
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    expect(exitCodeForPass(result)).toBe(0);
    expect(calls.at(-1)?.searchParams.get('starting_after')).toBe('9007199254740993');
    const row = store.db.prepare('SELECT order_index, raw FROM session_results').safeIntegers(true).get() as {
      order_index: bigint;
      raw: string;
    };
    expect(row.order_index).toBe(big);
    expect(row.raw).toContain('"order_index":9007199254740993');
    expect(store.state.all()[0]?.cursor).toBe(big);
  });

  it('accepts order_index as a decimal string', async () => {
    const { agent } = service(() => ({
      body: { data: [sessionRecord('71747'), sessionRecord('71748')], has_more: false, last_record_index: '71748' },
    }));
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    expect(result.streams[0]?.status).toBe('ok');
    expect(store.state.all()[0]?.cursor).toBe(71748n);
  });

  for (const variant of ['last_record_index', 'last_record_id', 'neither'] as const) {
    it(`pages with the envelope naming the cursor ${variant}`, async () => {
      const { agent, calls } = service((after) => {
        const start = after === null ? 0 : Number(after);
        const data = [sessionRecord(start + 1), sessionRecord(start + 2)];
        const body: Record<string, unknown> = { data, has_more: start < 4 };
        if (variant !== 'neither') body[variant] = start + 2;
        return { body };
      });
      const store = testStore();
      const result = await pass(mockClient(agent), store);
      expect(result.streams[0]).toMatchObject({ status: 'ok', records: 6, pages: 3 });
      expect(calls.map((u) => u.searchParams.get('starting_after'))).toEqual([null, null, '2', '4']);
      expect(store.state.all()[0]?.cursor).toBe(6n);
    });
  }

  it('sends sort=asc, limit, campaign_id and report_type', async () => {
    const { agent, calls } = mockService((url) =>
      url.pathname === '/v1/campaigns'
        ? { body: campaignList({ id: ROLE_CAMPAIGN, type: 'ROLE_SUBMISSION' }) }
        : { body: { data: [], has_more: false, last_record_index: null } },
    );
    await pass(mockClient(agent), testStore(), { pageSize: 37, reportType: 'OVERALL' });
    const q = calls[1]?.searchParams;
    expect(calls[1]?.pathname).toBe('/v1/campaigns/role/results');
    expect(Object.fromEntries(q ?? [])).toEqual({ campaign_id: ROLE_CAMPAIGN, sort: 'asc', limit: '37', report_type: 'OVERALL' });
  });
});

describe('client: guards against bad pages', () => {
  it('a bad record mid-stream goes to the quarantine; the rest of its page commits with the checkpoint', async () => {
    const { agent } = service((after) => {
      if (after === null) return { body: { data: [sessionRecord(1), sessionRecord(2)], has_more: true, last_record_index: 2 } };
      return {
        body: {
          data: [sessionRecord(3), { ...sessionRecord(4), order_index: 'abc' }, sessionRecord(5)],
          has_more: false,
          last_record_index: 5,
        },
      };
    });
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    const s = result.streams[0];
    expect(s?.status).toBe('ok');
    expect(exitCodeForPass(result)).toBe(0);
    expect(store.db.prepare('SELECT id FROM session_results ORDER BY order_index').pluck().all()).toEqual([
      'rec-1',
      'rec-2',
      'rec-3',
      'rec-5',
    ]);
    expect(store.state.all()[0]?.cursor).toBe(5n);
    const held = store.db.prepare('SELECT record_id, reason, page_after, page_position FROM quarantine').all();
    expect(held).toEqual([
      {
        record_id: 'rec-4',
        reason: expect.stringMatching(
          /^order_index: "abc" .* — record 2 of 3 \(id rec-4\), page 2, GET \/v1\/campaigns\/session\/results \(campaign 1111.*\)$/,
        ),
        page_after: '2',
        page_position: 2,
      },
    ]);
  });

  for (const [what, record, pattern] of [
    ['no id', { ...sessionRecord(1), id: undefined }, /id: missing/],
    ['no campaign', { ...sessionRecord(1), campaign: null }, /campaign\.id: missing/],
    ['another campaign', sessionRecord(1, 'x', 'other'), /not the campaign asked for/],
    [
      'another campaign in a flat campaign_id',
      { ...sessionRecord(1), campaign: undefined, campaign_id: 'other' },
      /campaign_id: "other" is not the campaign asked for/,
    ],
    [
      'an empty flat campaign_id',
      { ...sessionRecord(1), campaign: undefined, campaign_id: '' },
      /campaign_id: "" is not a usable campaign id/,
    ],
    ['a negative order_index', sessionRecord(-5), /order_index: -5/],
    ['an order_index past int64', { ...sessionRecord(0), order_index: '9223372036854775808' }, /order_index: "9223372036854775808"/],
    ['a float order_index', sessionRecord(1.5), /order_index: 1.5/],
    ['a score that is a word', { ...sessionRecord(1), score: 'high' }, /score: "high" is not a number/],
  ] as const) {
    it(`quarantines a record with ${what}, naming position and field`, async () => {
      const { agent } = service(() => ({ body: { data: [record], has_more: false } }));
      const store = testStore();
      const result = await pass(mockClient(agent), store);
      expect(result.streams[0]?.status).toBe('ok');
      const reasons = store.db.prepare('SELECT reason FROM quarantine').pluck().all() as string[];
      expect(reasons.length).toBe(1);
      expect(reasons[0]).toMatch(/record 1 of 1/);
      expect(reasons[0]).toMatch(pattern);
    });
  }

  it('quarantines order_index 1e3 (which JSON.parse would quietly make 1000), its text as sent', async () => {
    const text = '{"id":"a","campaign":{"id":"11111111-1111-4111-8111-111111111111"},"order_index":1e3}';
    const { agent } = service(() => ({ body: `{"data":[${text}],"has_more":false}` }));
    const store = testStore();
    await pass(mockClient(agent), store);
    const held = store.db.prepare('SELECT raw, reason FROM quarantine').get() as { raw: string; reason: string };
    expect(held.reason).toMatch(/order_index: 1e3 \(not an integer\)/);
    expect(held.raw).toBe(text);
  });

  it('stops a stream whose page holds one id twice', async () => {
    const { agent } = service(() => ({ body: { data: [sessionRecord(1), sessionRecord(2, 'rec-1')], has_more: false } }));
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    expect(result.streams[0]?.status).toBe('failed');
    expect(result.streams[0]?.error).toMatch(/id rec-1 is served twice in one page/);
    expect(store.db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(0);
  });

  it('stops a stream whose cursor does not advance, or whose has_more page is empty', async () => {
    for (const body of [
      { data: [], has_more: true, last_record_index: 5 },
      { data: [sessionRecord(1)], has_more: true, last_record_index: 0 },
    ]) {
      let calls = 0;
      const { agent } = service((after) => {
        calls++;
        return after === null ? { body } : { body: { data: [sessionRecord(1)], has_more: true, last_record_index: 1 } };
      });
      const result = await pass(mockClient(agent), testStore());
      expect(result.streams[0]?.status).toBe('failed');
      expect(result.streams[0]?.error).toMatch(/endless loop/);
      expect(calls).toBeLessThan(3);
    }
  });

  it('stops on records going backwards or repeated across pages', async () => {
    const { agent } = service((after) =>
      after === null
        ? { body: { data: [sessionRecord(5), sessionRecord(6)], has_more: true, last_record_index: 6 } }
        : { body: { data: [sessionRecord(6)], has_more: false, last_record_index: 6 } },
    );
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    expect(result.streams[0]?.error).toMatch(/order_index: 6 does not come after 6/);
    expect(store.state.all()[0]?.cursor).toBe(6n);
  });
});

describe('client: HTTP failures', () => {
  it('401 stops everything with AuthError (exit 3) and the message never holds the key', async () => {
    const { agent } = mockService(() => ({
      status: 401,
      body: { error: { message: 'Unauthorized', status_code: 401, request_id: 'req-1' } },
    }));
    const err = await pass(mockClient(agent), testStore()).catch((e) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect(err.exitCode).toBe(3);
    expect(err.message).toMatch(/^401 Unauthorized .* — GET \/v1\/campaigns \[request_id req-1\]$/);
    expect(err.message).not.toContain('secret-test-key');
  });

  it('404 fails only its stream (exit 4), the others sync', async () => {
    const { agent } = mockService((url) => {
      if (url.pathname === '/v1/campaigns')
        return { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }, { id: ROLE_CAMPAIGN, type: 'ROLE_SUBMISSION' }) };
      if (url.pathname.includes('/role/'))
        return { status: 404, body: { error: { message: 'Not found', status_code: 404, request_id: 'r' } } };
      return { body: { data: [sessionRecord(1)], has_more: false, last_record_index: 1 } };
    });
    const result = await pass(mockClient(agent), testStore());
    expect(exitCodeForPass(result)).toBe(4);
    const role = result.streams.find((s) => s.id.endpoint === 'role');
    expect(role?.error).toBe(`404 Not found — GET /v1/campaigns/role/results (campaign ${ROLE_CAMPAIGN}) [request_id r]`);
    expect(result.streams.find((s) => s.id.endpoint === 'session')?.status).toBe('ok');
  });

  it('retries 503 then succeeds; exhausted retries fail the stream as unavailable (exit 5)', async () => {
    let n = 0;
    const { agent } = service(() =>
      ++n <= 2 ? { status: 503, body: 'upstream down' } : { body: { data: [sessionRecord(1)], has_more: false } },
    );
    const clock = fakeClock();
    const ok = await pass(mockClient(agent, {}, {}, clock), testStore());
    expect(ok.streams[0]).toMatchObject({ status: 'ok', requests: 3 });
    const { agent: down } = service(() => ({ status: 500, body: '<html>oops</html>' }));
    const failed = await pass(mockClient(down, { maxRetries: 2 }, {}, fakeClock()), testStore());
    expect(failed.streams[0]?.requests).toBe(3);
    expect(failed.streams[0]?.error).toMatch(/500 \(not JSON: "<html>oops<\/html>"\)/);
    expect(exitCodeForPass(failed)).toBe(5);
  });

  it('429 honours Retry-After as an HTTP date: no request before it is due', async () => {
    const clock = fakeClock(Date.parse('2026-11-22T10:00:00Z'));
    const at: number[] = [];
    let n = 0;
    const { agent } = service(() => {
      at.push(clock.now());
      return ++n === 1
        ? {
            status: 429,
            body: { error: { message: 'slow down', status_code: 429, request_id: 'r' } },
            headers: { 'retry-after': 'Sun, 22 Nov 2026 10:01:01 GMT' },
          }
        : { body: { data: [], has_more: false } };
    });
    const result = await pass(mockClient(agent, {}, {}, clock), testStore());
    expect(exitCodeForPass(result)).toBe(0);
    expect((at[1] as number) - (at[0] as number)).toBeGreaterThanOrEqual(61_000);
  });

  it('a Retry-After longer than --max-retry-wait fails the stream on the first response, naming it', async () => {
    const clock = fakeClock();
    const { agent, calls } = service(() => ({
      status: 429,
      body: { error: { message: 'Too many requests', status_code: 429, request_id: 'r' } },
      headers: { 'retry-after': '3000' },
    }));
    const result = await pass(mockClient(agent, { maxRetryWaitMs: 120_000 }, {}, clock), testStore());
    expect(clock.sleeps).toEqual([]);
    expect(calls.filter((u) => u.pathname !== '/v1/campaigns')).toHaveLength(1);
    expect(result.streams[0]?.requests).toBe(1);
    expect(result.streams[0]?.error).toBe(
      `429 Too many requests; Retry-After 3000 s is longer than --max-retry-wait 2m: gave up — GET /v1/campaigns/session/results (campaign ${CAMPAIGN}) [request_id r]`,
    );
    expect(exitCodeForPass(result)).toBe(5);
  });

  it('a Retry-After within --max-retry-wait is honoured', async () => {
    const clock = fakeClock();
    let n = 0;
    const { agent } = service(() =>
      ++n === 1 ? { status: 503, headers: { 'retry-after': '90' } } : { body: { data: [sessionRecord(1)], has_more: false } },
    );
    const result = await pass(mockClient(agent, { maxRetryWaitMs: 120_000 }, {}, clock), testStore());
    expect(exitCodeForPass(result)).toBe(0);
    expect(clock.sleeps).toContain(90_000);
  });

  it('an invalid Retry-After (-1, 1.5, abc, 1e10) is treated as absent: the backoff, not a retry at once', async () => {
    for (const value of ['-1', '1.5', 'abc', '1e10', '2026-11-22']) {
      const clock = fakeClock(Date.parse('2026-11-22T10:00:00Z'));
      let n = 0;
      const { agent } = service(() =>
        ++n === 1 ? { status: 503, headers: { 'retry-after': value } } : { body: { data: [sessionRecord(1)], has_more: false } },
      );
      const result = await pass(mockClient(agent, {}, {}, clock), testStore());
      expect(exitCodeForPass(result)).toBe(0);
      // random() is 0: the first backoff step is half of 500 ms.
      expect({ value, sleeps: clock.sleeps }).toEqual({ value, sleeps: [250] });
    }
  });

  it('does not follow redirects (the key must not go to another host)', async () => {
    const { agent, calls } = mockService(() => ({ status: 302, headers: { location: 'https://evil.example/steal' } }));
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(/302 redirect to evil\.example not followed/);
    expect(calls.length).toBe(1);
  });

  it('HTML instead of JSON is a clear error naming the request', async () => {
    const { agent } = mockService(() => ({ body: '<!doctype html><title>Login</title>', headers: { 'content-type': 'text/html' } }));
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toMatch(/^200 but the body is not JSON \(text\/html\): .* — GET \/v1\/campaigns$/);
  });

  it('a body over the cap is an error, not an out-of-memory', async () => {
    const { agent } = mockService(() => ({ body: `{"data":[],"pad":"${'x'.repeat(5000)}"}` }));
    const err = await mockClient(agent, {}, { maxBodyBytes: 1000 })
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toMatch(/over the 1000-byte cap/);
  });

  it('an unexpected campaign list shape names the path of the problem', async () => {
    const { agent } = mockService(() => ({ body: { data: [{ name: 'no id' }] } }));
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toMatch(/data\.0\.id/);
  });

  it('a failing campaign list means nothing synced: exit 5', async () => {
    const { agent } = mockService(() => ({ status: 503, body: '' }));
    const err = await pass(mockClient(agent, { maxRetries: 0 }), testStore()).catch((e) => e);
    expect(err.exitCode).toBe(5);
    expect(err.message).toMatch(/^nothing synced: 503 .* — GET \/v1\/campaigns$/);
  });

  it('network errors are NetworkErrors naming the request', async () => {
    const { agent } = mockService(() => {
      throw new Error('connection reset');
    });
    const err = await mockClient(agent, { maxRetries: 0 })
      .listCampaigns()
      .catch((e) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.message).toMatch(/ — GET \/v1\/campaigns$/);
    // A socket never made (no file descriptors left) has no local address: Node's "- Local (undefined:undefined)" is dropped.
    const { agent: out } = mockService(() => {
      throw Object.assign(new Error('connect EMFILE 127.0.0.1:443 - Local (undefined:undefined)'), { code: 'EMFILE' });
    });
    const emfile = await mockClient(out, { maxRetries: 0 })
      .listCampaigns()
      .catch((e) => e);
    expect(emfile.message).toBe('EMFILE: connect EMFILE 127.0.0.1:443 — GET /v1/campaigns');
  });
});

describe('what the client tells the budget of each request', () => {
  /** A budget that grants every request and records what each release said. */
  function spyBudget() {
    const said: Array<boolean | undefined> = [];
    const inner = new RequestBudget({ count: 10_000, windowMs: 1000 });
    const grant = () => (answered?: boolean) => void said.push(answered);
    const budget = Object.assign(Object.create(inner) as RequestBudget, { tryAcquire: grant, acquire: async () => grant() });
    return { budget, said };
  }

  /**
   * A dispatcher that plays `script` on each request's handler (undici's legacy handler calls), so an
   * exchange can stop at any stage: before its connection, sent, answered and cut.
   */
  function scripted(script: (h: Dispatcher.DispatchHandler) => void): Dispatcher {
    const dispatch = (_opts: unknown, handler: Dispatcher.DispatchHandler) => {
      script(handler);
      return true;
    };
    return { dispatch } as unknown as Dispatcher;
  }
  /** The request is handed to a connected socket; an abort ends it with onError, as undici's does. */
  const connect = (h: Dispatcher.DispatchHandler) => h.onConnect?.((err) => h.onError?.(err as Error));
  const headers = [Buffer.from('content-type'), Buffer.from('application/json')];
  const resume = () => {};

  it('answered (any status, a body cut off after it) or never sent is a known end; sent and unanswered (lost, timed out) is not: the server may still count it', async () => {
    const cases: Array<[string, (h: Dispatcher.DispatchHandler) => void, boolean, number | undefined]> = [
      [
        'a 503',
        (h) => {
          connect(h);
          h.onHeaders?.(503, headers, resume, 'Service Unavailable');
          h.onComplete?.([]);
        },
        true,
        503,
      ],
      [
        'a 200 whose body is cut off',
        (h) => {
          connect(h);
          h.onHeaders?.(200, headers, resume, 'OK');
          h.onData?.(Buffer.from('{"data":['));
          h.onError?.(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
        },
        true,
        200,
      ],
      [
        'refused at connect',
        (h) => h.onError?.(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), { code: 'ECONNREFUSED' })),
        true,
        undefined,
      ],
      // A SYN never answered: --timeout ends it before any connection (undici's own connect timeout is 10 s).
      ['a connection never made, timed out', () => {}, true, undefined],
      [
        'sent, the connection lost',
        (h) => {
          connect(h);
          h.onError?.(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        },
        false,
        undefined,
      ],
      ['sent, no answer within --timeout', (h) => connect(h), false, undefined],
    ];
    for (const [what, script, known, status] of cases) {
      const { budget, said } = spyBudget();
      const events: Array<number | undefined> = [];
      await mockClient(
        new MockAgent(),
        { maxRetries: 0, timeoutMs: 50 },
        { budget, dispatcher: scripted(script), events: { request: (e) => void events.push(e.status) } },
      )
        .listCampaigns()
        .catch(() => undefined);
      expect(said, what).toEqual([known]);
      expect(events, `${what}: the request event's status`).toEqual([status]);
    }
  });
});

describe('pass: an error that is not a stream failure', () => {
  it('stops every stream and leaves none writing after the pass returns', async () => {
    const { agent } = mockService((url) => {
      if (url.pathname === '/v1/campaigns')
        return { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }, { id: ROLE_CAMPAIGN, type: 'ROLE_SUBMISSION' }) };
      const after = Number(url.searchParams.get('starting_after') ?? 0);
      const campaign = url.searchParams.get('campaign_id') as string;
      return {
        body: {
          data: [sessionRecord(after + 1, `${campaign}-${after + 1}`, campaign)],
          has_more: after < 50,
          last_record_index: after + 1,
        },
      };
    });
    const store = testStore();
    let writes = 0;
    const sink = store.sink;
    const failing = {
      ...sink,
      campaigns: sink.campaigns.bind(sink),
      openStream: sink.openStream.bind(sink),
      endStream: sink.endStream.bind(sink),
      flush: sink.flush.bind(sink),
      settle: sink.settle.bind(sink),
      close: sink.close.bind(sink),
      failure: undefined,
      commitPage: (...args: Parameters<typeof sink.commitPage>) => {
        writes++;
        if (args[0].endpoint === 'role' && writes > 5) throw new Error('SQLITE_FULL: database or disk is full');
        return sink.commitPage(...args);
      },
    };
    const client = mockClient(agent);
    const err = await runPass({ client, sink: failing, state: store.state }, passDefaults).catch((e) => e);
    expect(err.message).toMatch(/SQLITE_FULL/);
    const after = writes;
    await new Promise((r) => setTimeout(r, 100));
    expect(writes).toBe(after);
    expect(store.db.inTransaction).toBe(false);
  });
});

describe('long-running processes', () => {
  it('leave no listener behind on the process-wide signal, request after request, pass after pass', async () => {
    const { EventEmitter } = await import('node:events');
    const controller = new AbortController();
    const { agent } = service(() => ({ body: { data: [], has_more: false } }));
    const client = mockClient(agent, {}, { signal: controller.signal });
    const store = testStore();
    for (let i = 0; i < 20; i++) {
      await runPass({ client, sink: store.sink, state: store.state, signal: controller.signal }, passDefaults);
    }
    expect(EventEmitter.getEventListeners(controller.signal, 'abort').length).toBe(0);
  });
});

describe('campaign list oddities', () => {
  it('a campaign listed twice is synced once', async () => {
    const list = campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' });
    const { agent, calls } = mockService((url) =>
      url.pathname === '/v1/campaigns'
        ? { body: { data: [...list.data, ...list.data] } }
        : { body: { data: [sessionRecord(1)], has_more: false, last_record_index: 1 } },
    );
    const result = await pass(mockClient(agent), testStore());
    expect(result.streams.length).toBe(1);
    expect(calls.length).toBe(2);
  });
});
