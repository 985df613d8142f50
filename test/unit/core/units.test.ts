import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { parseRetryAfter, retryDelay } from '../../../src/api/retry.js';
import { resolveApiConfig, resolveDb } from '../../../src/config/config.js';
import { parseDate, parseDuration, parseRate } from '../../../src/config/duration.js';
import { withoutCandidate } from '../../../src/core/email.js';
import { NumberText, parseJson, toJson } from '../../../src/core/json.js';
import { isLoopbackHost } from '../../../src/core/loopback.js';
import { ApiError, AuthError, NetworkError, UsageError } from '../../../src/errors.js';
import { SlidingWindow } from '../../../src/simulator/window.js';
import { COLUMNS } from '../../../src/store/model/rows.js';
import { unstorable } from '../../../src/store/model/storable.js';
import { rowParams, UNSTORABLE } from '../../../src/store/pg/statements.js';
import { formatCount } from '../../../src/ui/table.js';
import { tempDir } from '../../helpers/index.js';

const req = { method: 'GET', path: '/v1/campaigns' };

describe('durations, rates and dates', () => {
  it('parses durations in ms, s, m, h', () => {
    expect(parseDuration('500ms', 'x')).toBe(500);
    expect(parseDuration('30s', 'x')).toBe(30_000);
    expect(parseDuration('2m', 'x')).toBe(120_000);
    expect(parseDuration('1.5h', 'x')).toBe(5_400_000);
    for (const bad of ['30', '2 minutes', '-1s', '0s', 's']) expect(() => parseDuration(bad, '--timeout')).toThrow(UsageError);
    expect(() => parseDuration('abc', '--timeout')).toThrow(/--timeout: "abc" is not a duration/);
    // A bare number is told what is missing (a unit), zero included, not that it is no duration.
    for (const bare of ['0', '30', '1.5'])
      expect(() => parseDuration(bare, '--timeout')).toThrow(
        `--timeout: "${bare}" needs a unit: ms, s, m, h or d (examples: 500ms, 30s, 2m, 1h, 1d)`,
      );
    expect(() => parseDuration('0ms', '--timeout')).toThrow('--timeout: "0ms" must be more than zero');
    // Under a millisecond rounds to none: a rate of 2/0.4ms would be no limit at all.
    expect(() => parseDuration('0.4ms', '--timeout')).toThrow('--timeout: "0.4ms" is under a millisecond; give 1ms or more');
    expect(() => parseRate('2/0.4ms', '--rate-limit')).toThrow('--rate-limit: "2/0.4ms" is not a rate');
    // Past 2^53 it is too many to count, not too few.
    expect(() => parseRate('9007199254740993/1m', '--rate-limit')).toThrow(/is more requests than can be counted/);
    expect(parseDuration('0.5ms', '--timeout')).toBe(1);
  });

  it('parses rates: N (per minute), N/DURATION, N/unit', () => {
    expect(parseRate('100', 'x')).toEqual({ count: 100, windowMs: 60_000 });
    expect(parseRate('100/1m', 'x')).toEqual({ count: 100, windowMs: 60_000 });
    expect(parseRate('20/2s', 'x')).toEqual({ count: 20, windowMs: 2000 });
    expect(parseRate('5/s', 'x')).toEqual({ count: 5, windowMs: 1000 });
    for (const bad of ['0', 'fast', '10/', '10/2', '-1/1m']) expect(() => parseRate(bad, '--rate-limit')).toThrow(UsageError);
  });

  it('accepts only real YYYY-MM-DD dates', () => {
    expect(parseDate('2026-02-28', 'x')).toBe('2026-02-28');
    for (const bad of ['2026-02-30', '2026-2-1', '20260201', 'yesterday']) expect(() => parseDate(bad, '--since')).toThrow(/--since/);
  });
});

describe('configuration', () => {
  const keyFile = () => {
    const p = join(tempDir(), 'key');
    writeFileSync(p, 'file-key\n');
    return p;
  };

  it('flags beat the environment', () => {
    const env = { CAMPAIGN_SYNC_BASE_URL: 'https://env.example', CAMPAIGN_SYNC_API_KEY: 'env-key', CAMPAIGN_SYNC_RATE_LIMIT: '10/1s' };
    const fromEnv = resolveApiConfig({}, env);
    expect(fromEnv.baseUrl.host).toBe('env.example');
    expect(fromEnv.apiKey).toBe('env-key');
    expect(fromEnv.rate).toEqual({ count: 10, windowMs: 1000 });
    const fromFlags = resolveApiConfig({ baseUrl: 'https://flag.example/v1/', apiKeyFile: keyFile(), rateLimit: '5/1s' }, env);
    expect(fromFlags.baseUrl.host).toBe('flag.example');
    expect(fromFlags.baseUrl.pathname).toBe('/');
    expect(fromFlags.apiKey).toBe('file-key');
    expect(fromFlags.rate.count).toBe(5);
    expect(resolveDb({}, { CAMPAIGN_SYNC_DB: '/x.db' })).toEqual({ path: '/x.db', where: 'CAMPAIGN_SYNC_DB' });
    expect(resolveDb({ db: '/y.db' }, { CAMPAIGN_SYNC_DB: '/x.db' })).toEqual({ path: '/y.db', where: '--db' });
    expect(resolveDb({}, {}).path).toBe('./campaign-sync.db');
  });

  it('says exactly what to set when base URL or key is missing', () => {
    expect(() => resolveApiConfig({}, {})).toThrow(/--base-url or CAMPAIGN_SYNC_BASE_URL and --api-key-file or CAMPAIGN_SYNC_API_KEY/);
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example' }, {})).toThrow(/missing --api-key-file or CAMPAIGN_SYNC_API_KEY/);
  });

  it('refuses plain http off loopback unless allowed, and never echoes the key', () => {
    const env = { CAMPAIGN_SYNC_API_KEY: 'sekrit' };
    expect(() => resolveApiConfig({ baseUrl: 'http://api.example.com' }, env)).toThrow(/--allow-insecure-http/);
    expect(resolveApiConfig({ baseUrl: 'http://api.example.com', allowInsecureHttp: true }, env).baseUrl.protocol).toBe('http:');
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', '[::1]']) {
      expect(resolveApiConfig({ baseUrl: `http://${host}:8080` }, env).baseUrl.protocol).toBe('http:');
    }
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
    expect(() => resolveApiConfig({ baseUrl: 'ftp://x' }, env)).toThrow(/http/);
    expect(() => resolveApiConfig({ baseUrl: 'https://user:pw@x.example' }, env)).toThrow(/user name/);
    try {
      resolveApiConfig({ baseUrl: 'nonsense' }, env);
    } catch (err) {
      expect(String(err)).not.toContain('sekrit');
    }
  });

  it('counts only localhost and literal loopback addresses as loopback: a *.localhost name goes to DNS here', () => {
    // nsswitch `files dns` sends api.localhost to the resolver, which may answer with a remote address.
    for (const host of ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.0.9', '::1', '[::1]', '0:0:0:0:0:0:0:1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['api.localhost', 'a.b.localhost', 'localhost.example.com', 'notlocalhost', '::2', '0.0.0.0']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
    const env = { CAMPAIGN_SYNC_API_KEY: 'sekrit' };
    expect(() => resolveApiConfig({ baseUrl: 'http://api.localhost:8080' }, env)).toThrow(
      /plain http:\/\/ to api\.localhost .*--allow-insecure-http/,
    );
  });

  it('reads the key file and reports problems with its path, never its content', () => {
    const dir = tempDir();
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: join(dir, 'missing') }, {})).toThrow(
      /cannot read .*missing \(ENOENT\)/,
    );
    const empty = join(dir, 'empty');
    writeFileSync(empty, '  \n');
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: empty }, {})).toThrow(/is empty/);
    const two = join(dir, 'two');
    writeFileSync(two, 'key-one key-two');
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: two }, {})).toThrow(/^(?!.*key-one).*alone on one line/);
  });
});

describe('retry policy', () => {
  const opts = { maxRetries: 5, baseMs: 100, capMs: 1000, maxRetryAfterMs: 120_000 };
  it('retries 429, 5xx and network errors with capped, jittered exponential backoff', () => {
    const e503 = new ApiError(req, '503', { status: 503 });
    expect(retryDelay(e503, 0, opts, () => 0)).toBe(50);
    expect(retryDelay(e503, 0, opts, () => 1)).toBe(100);
    expect(retryDelay(e503, 3, opts, () => 1)).toBe(800);
    expect(retryDelay(e503, 4, opts, () => 1)).toBe(1000);
    expect(retryDelay(new NetworkError(req, 'ECONNRESET', 'reset'), 0, opts, () => 0)).toBe(50);
    expect(retryDelay(e503, 5, opts)).toBeUndefined();
  });

  it('honours Retry-After and gives up on absurd ones', () => {
    expect(retryDelay(new ApiError(req, '429', { status: 429, retryAfterMs: 61_000 }), 0, opts)).toBe(61_000);
    expect(retryDelay(new ApiError(req, '429', { status: 429, retryAfterMs: 10 * 3_600_000 }), 0, opts)).toBeUndefined();
  });

  it('never retries 401, 404, 400 or bad data', () => {
    expect(retryDelay(new AuthError(req, '401', { status: 401 }), 0, opts)).toBeUndefined();
    for (const status of [400, 403, 404, 501]) expect(retryDelay(new ApiError(req, 'x', { status }), 0, opts)).toBeUndefined();
    expect(retryDelay(new Error('boom'), 0, opts)).toBeUndefined();
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('61', now)).toBe(61_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

import { prng } from '../../../src/simulator/random.js';
import { fakeClock } from '../../helpers/clock.js';

describe('request budget', () => {
  it('the server never counts more than N in any window, whatever the latency jitter, and the budget is used fully', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ count: 20, windowMs: 1000 }, clock);
    const random = prng(42);
    const arrivals: number[] = [];
    // Three "streams" sharing the budget; each request takes 1-40 ms and reaches the server at a
    // random instant between being sent and its response ending.
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let i = 0; i < 100; i++) {
          const release = await budget.acquire();
          const sent = clock.t;
          const latency = 1 + Math.floor(random() * 40);
          arrivals.push(sent + random() * latency);
          await clock.sleep(latency);
          release();
        }
      }),
    );
    arrivals.sort((a, b) => a - b);
    expect(arrivals.length).toBe(300);
    for (let i = 20; i < arrivals.length; i++) expect((arrivals[i] as number) - (arrivals[i - 20] as number)).toBeGreaterThanOrEqual(1000);
    // 300 requests at 20/s: 15 windows, each stretched by at most one response time (40 ms) plus margin.
    expect(clock.t).toBeLessThanOrEqual(15 * 1045);
  });

  it('a slot whose request is in flight is not reused until it ends', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ count: 1, windowMs: 100 }, clock);
    const release = await budget.acquire();
    let second = false;
    const next = budget.acquire().then(() => (second = true));
    await clock.sleep(500);
    expect(second).toBe(false);
    release();
    await next;
    expect(clock.t).toBeGreaterThanOrEqual(600);
  });

  it('a request waiting for a slot takes one freed meanwhile, not the one it was waiting for', async () => {
    const clock = fakeClock(0);
    const budget = new RequestBudget({ count: 2, windowMs: 2000 }, clock);
    const a = budget.tryAcquire() as (answered?: boolean) => void;
    const b = budget.tryAcquire() as () => void;
    // a is given up on (a timeout): its slot is held until two windows after it was sent (~4 s).
    clock.t = 100;
    a(false);
    clock.t = 200;
    let got = -1;
    const c = budget.acquire().then(() => {
      got = clock.t;
    });
    // b is answered while c sleeps: its slot comes round a window later, at ~2.3 s.
    clock.t = 310;
    b();
    await c;
    expect(got).toBe(310 + 2004);
  });

  it('a pause (429) holds every stream back', async () => {
    const clock = fakeClock(1000);
    const budget = new RequestBudget({ count: 100, windowMs: 1000 }, clock);
    budget.pause(61_000);
    await budget.acquire();
    expect(clock.t).toBe(62_000);
  });

  it('the sliding window answers how long to wait', () => {
    const w = new SlidingWindow(2, 100);
    expect(w.waitMs(0)).toBe(0);
    w.record(0);
    w.record(10);
    expect(w.waitMs(50)).toBe(50);
    expect(w.waitMs(100)).toBe(0);
  });
});

describe('lossless JSON', () => {
  it('keeps integers past 2^53 exact and the common case fast', () => {
    const v = parseJson('{"order_index":9223372036854775807,"score":4.5,"n":12}') as Record<string, unknown>;
    expect(v.order_index).toBe(9223372036854775807n);
    expect(v.score).toBe(4.5);
    expect(v.n).toBe(12);
    expect(toJson(v)).toBe('{"order_index":9223372036854775807,"score":4.5,"n":12}');
    expect(parseJson('{"a":1}')).toEqual({ a: 1 });
  });

  it('finds an integer JSON.parse would round anywhere in a page: nested, in arrays, negative, at 2^53', () => {
    const page = (n: string) => `{"data":[{"id":"a","x":{"y":[1,2,{"z":[${n}]}]}}],"has_more":false}`;
    type Page = { data: Array<{ x: { y: [number, number, { z: unknown[] }] } }> };
    const deep = (text: string) => (parseJson(text) as Page).data[0]?.x.y[2].z[0];
    expect(deep(page('9007199254740993'))).toBe(9007199254740993n);
    expect(deep(page('-9007199254740993'))).toBe(-9007199254740993n);
    expect(deep(page('9007199254740992'))).toBe(9007199254740992n);
    expect(deep(page('18446744073709551616'))).toBe(18446744073709551616n);
    expect(toJson(parseJson(page('123456789012345678901234567890')))).toBe(page('123456789012345678901234567890'));
    // Safe integers of 16 digits, and large or long floats, read the same either way.
    expect(deep(page('1000000000000000'))).toBe(1000000000000000);
    expect(deep(page('1e300'))).toBe(1e300);
    expect(deep(page('0.12345678901234567890'))).toBe(0.12345678901234568);
    // A number inside a string is text, never a reason to round anything.
    expect(parseJson('{"s":"12345678901234567890","n":1}')).toEqual({ s: '12345678901234567890', n: 1 });
  });

  it('survives a depth JSON.parse accepts (no recursion in the check)', () => {
    const depth = 200_000;
    const text = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    let v = parseJson(text);
    for (let i = 0; i < depth; i++) v = (v as unknown[])[0];
    expect(v).toBe(1);
  });

  it('keeps a cursor written as 1e3 or 10.0 as text so validation can reject it', () => {
    const v = parseJson('{"order_index":1e3}') as Record<string, unknown>;
    expect(v.order_index).toBeInstanceOf(NumberText);
    const w = parseJson('{"last_record_index":10.0,"x":1.0}') as Record<string, unknown>;
    expect(w.last_record_index).toBeInstanceOf(NumberText);
    expect(w.x).toBe(1);
  });
});

describe('what PostgreSQL cannot store (team mirror)', () => {
  it("the record rule finds U+0000 and lone surrogates in a parsed record exactly where its JSON text has the escapes PostgreSQL's rewrite replaces", () => {
    const strings = ['plain', 'a\u0000b', '\ud800', 'x\udfffy', '\ud83d\ude00', '\ude00\ud83d', 'C:\\u0000dir', '', '\u0001', '\ufffd'];
    const shapes = (s: string) => [{ s }, { [s]: 1 }, { a: [1, { b: [s] }] }, { list: [null, s, 2n] }, { deep: { deeper: s } }];
    for (const s of strings) {
      for (const value of shapes(s)) {
        const text = toJson(value);
        UNSTORABLE.lastIndex = 0;
        expect(unstorable(value) !== undefined, JSON.stringify(text)).toBe(UNSTORABLE.test(text));
      }
    }
    expect(unstorable({ a: 'a\u0000b' })).toMatch(/^a: this string holds U\+0000 or a lone surrogate/);
    expect(unstorable({ a: '\ud83d\ude00' })).toBeUndefined();
  });
});

describe("PostgreSQL's bulk parameters (team mirror)", () => {
  const hostile = 'q"uo\\te\n\ttab </x> \u007f \ud83d\ude00 é';
  const evalRow = ['score_detail', 'd-1', hostile, 'a\u0000b', 'x\ud800y\udc00', 0.1, '12', null, '2026-01-02 03:04', 'c-1', 3];
  const evalCells = ['score_detail', 'd-1', hostile, 'a\ufffdb', 'x\ufffdy\ufffd', 0.1, '12', null, '2026-01-02T03:04:00.000Z', 'c-1', 3];

  it('eval results go as one array per column: text exact but for U+0000 and lone surrogates, a time without a zone UTC', () => {
    const params = rowParams('eval_results', [evalRow, evalRow.map(() => null)]);
    expect(params).toEqual(evalCells.map((v) => [v, null]));
  });

  it('a table with raw goes as one jsonb page: each cell as the column reads it back, jsonb as it is, int64 exact', () => {
    const raw = '{"id":"r\\u0000","n":12345678901234567890123,"s":"\\u0000 and \\\\u0000"}';
    const row: unknown[] = COLUMNS.role_results.map(() => null);
    const at = (c: (typeof COLUMNS.role_results)[number]) => COLUMNS.role_results.indexOf(c);
    row[at('additional_scores')] = 'null';
    row[at('order_index')] = 9223372036854775807n;
    row[at('created_at')] = '2026-01-02T03:04:05.678+02:00';
    row[at('updated_at')] = '2026-01-02 03:04';
    row[at('overall_score')] = 0.1;
    row[at('raw')] = raw;
    // Text cells: plain ones take the fast path, the others are escaped and cleaned.
    row[at('user_id')] = 'plain-id';
    row[at('user_email')] = hostile;
    row[at('cefr')] = 'a\u0000b';
    row[at('recommendation_status')] = 'x\ud800y\udc00';
    row.push('r-1');
    const params = rowParams('role_results', [row, [...COLUMNS.role_results.map(() => null), 'r-2']]);
    expect(params.length).toBe(1);
    const text = params[0] as string;
    expect(text).toContain(',9223372036854775807,');
    expect(text).toContain('[{"id":"r\\ufffd","n":12345678901234567890123,"s":"\\ufffd and \\\\u0000"}]');
    const [parsed, empty] = JSON.parse(text);
    expect(parsed[at('additional_scores')]).toEqual([null]);
    expect(parsed[at('user_id')]).toBe('plain-id');
    expect(parsed[at('user_email')]).toBe(hostile);
    expect(parsed[at('cefr')]).toBe('a\ufffdb');
    expect(parsed[at('recommendation_status')]).toBe('x\ufffdy\ufffd');
    expect(parsed[at('overall_score')]).toBe(0.1);
    // Times as the instant SQLite's export gives (store/model/times.ts): UTC, a time without a zone too.
    expect(parsed[at('created_at')]).toBe('2026-01-02T01:04:05.678Z');
    expect(parsed[at('updated_at')]).toBe('2026-01-02T03:04:00.000Z');
    expect(parsed.at(-1)).toBe('r-1');
    expect(empty).toEqual([...COLUMNS.role_results.map(() => null), 'r-2']);
  });
});

describe('formatCount', () => {
  it('groups digits exactly as toLocaleString("en-US") does, without loading ICU for integers', () => {
    const values = [0, 7, 999, 1000, -1000, 12345, 999_999, 1_000_000, -1_234_567, 2 ** 53 - 1, 1.5, -0.25, 123456.789];
    for (const n of values) expect(formatCount(n), String(n)).toBe(n.toLocaleString('en-US'));
    for (const n of [0n, 1234n, -98765n, 2n ** 63n - 1n]) expect(formatCount(n), String(n)).toBe(n.toLocaleString('en-US'));
  });
});

describe("a candidate's e-mail and ids in a stored error text (forget)", () => {
  it('is replaced where it stands as a whole word, ignoring case for all of Unicode; longer names and numbers are left', () => {
    const text =
      'GET /x (campaign c): 500 boom for Person1.Private@Example.COM (user u1, not u10, nor xu1); see person1.private@example.com.';
    expect(withoutCandidate(text, ['person1.private@example.com', 'u1'])).toBe(
      'GET /x (campaign c): 500 boom for [erased] (user [erased], not u10, nor xu1); see [erased].',
    );
    // Composed or decomposed accents, any case; a longer address that ends the same is someone else.
    expect(withoutCandidate('ÉLODIE@exemple.fr, e\u0301lodie@exemple.fr and zélodie@exemple.fr.com', ['élodie@exemple.fr'])).toBe(
      '[erased], [erased] and zélodie@exemple.fr.com',
    );
    // A short id does not blank out every digit; regex characters in a term are literal.
    expect(withoutCandidate('id=1, 12, x1, 1.5 and 1', ['1'])).toBe('id=[erased], 12, x1, 1.5 and [erased]');
    expect(withoutCandidate('a+b(c)@x.io and abc@x.io', ['a+b(c)@x.io'])).toBe('[erased] and abc@x.io');
    expect(withoutCandidate('nothing to see', [])).toBe('nothing to see');
    // As a quoted URL writes it, hex digits in either case.
    expect(
      withoutCandidate('GET /x?email=person1.private%40example.com&user_id=u1 and Zo%C3%AB%40x.io', [
        'person1.private@example.com',
        'u1',
        'zoë@x.io',
      ]),
    ).toBe('GET /x?email=[erased]&user_id=[erased] and [erased]');
    // A text with decomposed letters that does not name the candidate comes back exactly as stored.
    const decomposed = 'Zoe\u0308 failed';
    expect(withoutCandidate(decomposed, ['someone@example.com'])).toBe(decomposed);
  });
});
