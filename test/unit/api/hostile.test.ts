/** Hostile input from the service: each gets a clear error naming the request, and loses nothing committed. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { exitCodeForPass } from '../../../src/errors.js';
import { fakeClock } from '../../helpers/clock.js';
import { clientConfig } from '../../helpers/index.js';
import { CAMPAIGN, campaignList, mockClient, mockService, pass, sessionRecord, testStore } from '../../helpers/mock.js';

const INT64_MAX = '9223372036854775807';

function twoPages(second: string) {
  return mockService((url) => {
    if (url.pathname === '/v1/campaigns') return { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }) };
    if (url.searchParams.get('starting_after') === null)
      return { body: { data: [sessionRecord(1), sessionRecord(2)], has_more: true, last_record_index: 2 } };
    return { body: second };
  });
}

describe('hostile order_index values', () => {
  it('2^63 - 1 is kept exactly: stored, checkpointed and written as NDJSON', async () => {
    for (const format of ['sqlite', 'ndjson'] as const) {
      const { agent } = twoPages(
        `{"data":[{"id":"max","campaign":{"id":"${CAMPAIGN}"},"order_index":${INT64_MAX}}],"has_more":false,"last_record_index":${INT64_MAX}}`,
      );
      const store = testStore(format);
      const result = await pass(mockClient(agent), store);
      expect(exitCodeForPass(result)).toBe(0);
      expect(store.state.all()[0]?.cursor).toBe(2n ** 63n - 1n);
      if (format === 'sqlite') {
        expect(store.db.prepare("SELECT order_index FROM session_results WHERE id = 'max'").safeIntegers(true).pluck().get()).toBe(
          2n ** 63n - 1n,
        );
      } else {
        await store.sink.close();
        const { readFileSync } = await import('node:fs');
        expect(readFileSync(`${store.outDir}/session_results.ndjson`, 'utf8')).toContain(`"order_index":${INT64_MAX}}`);
      }
    }
  });

  for (const [what, token, shown] of [
    ['above 2^63 as a number', '9223372036854775808', /order_index: 9223372036854775808 is not a non-negative int64/],
    ['negative', '-1', /order_index: -1 is not/],
    ['written 1e3', '1e3', /order_index: 1e3 \(not an integer\)/],
    ['a float', '3.5', /order_index: 3.5 \(not an integer\)/],
    ['a non-numeric string', '"12abc"', /order_index: "12abc" is not/],
    ['null', 'null', /order_index: null is not/],
  ] as const) {
    it(`order_index ${what}: the record is quarantined as sent, naming request, record and field; the checkpoint stays`, async () => {
      const text = `{"id":"bad","campaign":{"id":"${CAMPAIGN}"},"order_index":${token}}`;
      const { agent } = twoPages(`{"data":[${text}],"has_more":false}`);
      const store = testStore();
      const result = await pass(mockClient(agent), store);
      expect(exitCodeForPass(result)).toBe(0);
      const held = store.db.prepare('SELECT raw, reason FROM quarantine').all() as Array<{ raw: string; reason: string }>;
      expect(held.length).toBe(1);
      expect(held[0]?.raw).toBe(text);
      const reason = held[0]?.reason ?? '';
      // The reason first, then where: a cut line (a table's cell) keeps what went wrong.
      expect(reason).toMatch(
        / — record 1 of 1 \(id bad\), page 2, GET \/v1\/campaigns\/session\/results \(campaign 11111111-1111-4111-8111-111111111111\)$/,
      );
      expect(reason).toMatch(new RegExp(`^${shown.source}`));
      expect(reason).toMatch(shown);
      expect(store.db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(2);
      // Nothing on page 2 proves where it ends (no usable order_index, no envelope cursor): the checkpoint stays.
      expect(store.state.all()[0]?.cursor).toBe(2n);
    });
  }
});

describe('hostile responses', () => {
  it('a 100 MB body is cut off at the cap, in bounded memory, as an error naming the request', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    let sent = 0;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[],"pad":"');
      const pump = () => {
        while (sent < 100) {
          sent++;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end('"}');
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const before = process.memoryUsage().rss;
      const client = new ApiClient(clientConfig(url, { rate: { count: 100, windowMs: 1000 }, timeoutMs: 30_000, maxRetries: 0 }), {
        budget: new RequestBudget({ count: 100, windowMs: 1000 }),
        maxBodyBytes: 16 * 1024 * 1024,
      });
      const err = await client.listCampaigns().catch((e) => e);
      await client.close();
      expect(err.message).toMatch(/^200: response body is over the 16777216-byte cap.* — GET \/v1\/campaigns$/);
      expect(sent).toBeLessThan(100);
      expect(process.memoryUsage().rss - before).toBeLessThan(80 * 1024 * 1024);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('Retry-After: 61 seconds means no request before it is due', async () => {
    const clock = fakeClock(1_000_000);
    const at: number[] = [];
    const { agent } = mockService(() => {
      at.push(clock.now());
      return at.length === 1
        ? {
            status: 429,
            body: { error: { message: 'Too many requests', status_code: 429, request_id: 'r' } },
            headers: { 'retry-after': '61' },
          }
        : { body: campaignList() };
    });
    await mockClient(agent, {}, {}, clock).listCampaigns();
    expect(at.length).toBe(2);
    expect((at[1] as number) - (at[0] as number)).toBeGreaterThanOrEqual(61_000);
  });

  it('an error body that is not JSON still gives one clear line', async () => {
    const { agent } = mockService(() => ({ status: 404, body: 'Not Found\n<hr>nginx' }));
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toBe(
      '404 (not JSON: "Not Found <hr>nginx"): nothing at https://api.test/v1/campaigns; --base-url probably lacks the path the service lives under: give the URL that /v1 hangs from — GET /v1/campaigns',
    );
  });

  it('ids carrying path characters stay data: the request path is fixed and the id travels encoded', async () => {
    const evil = '../../admin?x=1#frag/..%2F';
    const { agent, calls } = mockService((url) => {
      if (url.pathname === '/v1/campaigns') return { body: campaignList({ id: evil, type: 'SESSION_COMPLETION' }) };
      return { body: { data: [sessionRecord(1, '../../etc/passwd', evil)], has_more: false } };
    });
    const store = testStore('ndjson');
    const result = await pass(mockClient(agent), store);
    expect(exitCodeForPass(result)).toBe(0);
    expect(calls[1]?.pathname).toBe('/v1/campaigns/session/results');
    expect(calls[1]?.searchParams.get('campaign_id')).toBe(evil);
    await store.sink.close();
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(store.outDir).sort()).toEqual([
      '.campaign-sync.lock',
      '_manifest.ndjson',
      'campaigns.ndjson',
      'role_results.ndjson',
      'session_results.ndjson',
    ]);
  });
});

describe('timeouts', () => {
  it('--timeout bounds the whole request: headers at once, then a body that trickles, is a timeout', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[');
      const timer = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const client = new ApiClient(clientConfig(url, { rate: { count: 100, windowMs: 1000 }, timeoutMs: 400, maxRetries: 0 }), {
        budget: new RequestBudget({ count: 100, windowMs: 1000 }),
      });
      const t0 = Date.now();
      const err = await client.listCampaigns().catch((e) => e);
      await client.close();
      expect(err.message).toBe('no complete answer within 400 ms — GET /v1/campaigns');
      expect(Date.now() - t0).toBeLessThan(2000);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
