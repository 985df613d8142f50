/**
 * Waits and retries that tell the truth: a Retry-After longer than --max-retry-wait fails at once,
 * certificate errors are never retried, an unknown host is retried once, and each says what to check.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { parseRetryAfter, retryDecision } from '../../../src/api/retry.js';
import { resolveApiConfig } from '../../../src/config/config.js';
import { parseDuration } from '../../../src/config/duration.js';
import { formatDuration } from '../../../src/core/rate.js';
import { ApiError, NetworkError, UsageError } from '../../../src/errors.js';
import { fakeClock } from '../../helpers/clock.js';
import { servedRecords, sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { selfSigned as makeCertificate } from '../../helpers/tls.js';
import { describeWith, needs } from '../../helpers/tools.js';

const req = { method: 'GET', path: '/v1/campaigns/session/results', campaignId: 'c1' };
const opts = { maxRetries: 5, baseMs: 100, capMs: 1000, maxRetryAfterMs: 120_000 };

describe('durations in days', () => {
  it('parses and formats d', () => {
    expect(parseDuration('1d', '--max-retry-wait')).toBe(86_400_000);
    expect(parseDuration('0.5d', '--max-retry-wait')).toBe(43_200_000);
    expect(formatDuration(86_400_000)).toBe('1d');
    expect(formatDuration(3_600_000)).toBe('1h');
    expect(() => parseDuration('2 days', '--max-retry-wait')).toThrow(/--max-retry-wait: "2 days" is not a duration \(examples: .*1d\)/);
  });

  it('--max-retry-wait defaults to 2m and is validated, naming the flag', () => {
    const base = { baseUrl: 'https://api.example.com' };
    expect(resolveApiConfig(base, { CAMPAIGN_SYNC_API_KEY: 'k' }).maxRetryWaitMs).toBe(120_000);
    expect(resolveApiConfig({ ...base, maxRetryWait: '1h' }, { CAMPAIGN_SYNC_API_KEY: 'k' }).maxRetryWaitMs).toBe(3_600_000);
    expect(() => resolveApiConfig({ ...base, maxRetryWait: 'soon' }, { CAMPAIGN_SYNC_API_KEY: 'k' })).toThrow(UsageError);
    expect(() => resolveApiConfig({ ...base, maxRetryWait: 'soon' }, { CAMPAIGN_SYNC_API_KEY: 'k' })).toThrow(/^--max-retry-wait: /);
  });
});

describe('retry policy: what it stops on, and why', () => {
  it('a Retry-After over the cap stops at once and names both', () => {
    const err = new ApiError(req, '429 Too many requests', { status: 429, retryAfterMs: 3_000_000 });
    expect(retryDecision(err, 0, opts)).toEqual({
      retry: false,
      reason: 'Retry-After 3000 s is longer than --max-retry-wait 2m: gave up',
    });
    // At the cap it is honoured, exactly.
    const atCap = new ApiError(req, '503', { status: 503, retryAfterMs: 120_000 });
    expect(retryDecision(atCap, 4, opts)).toEqual({ retry: true, delayMs: 120_000 });
  });

  it('certificate and TLS errors are never retried, and say what to check', () => {
    for (const code of [
      'CERT_HAS_EXPIRED',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
    ]) {
      const d = retryDecision(new NetworkError(req, code, `${code}: x`), 0, opts);
      expect(d.retry, code).toBe(false);
      expect(!d.retry && d.reason, code).toMatch(/not retried.*certificate.*NODE_EXTRA_CA_CERTS/);
    }
    // A handshake that merely timed out is the network's trouble, not the certificate's.
    expect(retryDecision(new NetworkError(req, 'ERR_TLS_HANDSHAKE_TIMEOUT', 'x'), 0, opts, () => 0).retry).toBe(true);
  });

  it('the wrong scheme for the port is never retried, and says what to change', () => {
    const toTls = retryDecision(new NetworkError(req, 'TLS_PORT', 'x'), 0, opts);
    expect(toTls).toEqual({ retry: false, reason: 'not retried: use https:// in --base-url' });
    for (const code of ['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']) {
      const d = retryDecision(new NetworkError(req, code, `${code}: x`), 0, opts);
      expect(!d.retry && d.reason, code).toMatch(/^not retried: that port does not speak HTTPS .*check the port in --base-url/);
    }
  });

  it('an unknown host is retried once, then stops naming the host name and DNS', () => {
    for (const code of ['ENOTFOUND', 'EAI_AGAIN']) {
      const err = new NetworkError(req, code, `${code}: getaddrinfo ${code} x.invalid`);
      expect(retryDecision(err, 0, opts, () => 0)).toEqual({ retry: true, delayMs: 50 });
      const second = retryDecision(err, 1, opts, () => 0);
      expect(second.retry).toBe(false);
      expect(!second.retry && second.reason).toMatch(/check the host name in --base-url and DNS/);
    }
  });

  it('ordinary failures keep their backoff and stop without a reason when not retryable', () => {
    expect(retryDecision(new NetworkError(req, 'ECONNRESET', 'reset'), 2, opts, () => 1)).toEqual({ retry: true, delayMs: 400 });
    expect(retryDecision(new ApiError(req, '404', { status: 404 }), 0, opts)).toEqual({ retry: false });
  });
});

/** A self-signed certificate made for this test run, read (openssl is part of the build image and CI). */
function selfSigned(): { key: Buffer; cert: Buffer } {
  const files = makeCertificate();
  return { key: readFileSync(files.key), cert: readFileSync(files.cert) };
}

function client(baseUrl: string, maxRetries = 5) {
  const config = {
    baseUrl: new URL(baseUrl),
    apiKey: 'retry-wait-test-key',
    rate: { count: 100, windowMs: 1000 },
    timeoutMs: 5000,
    maxRetries,
    maxRetryWaitMs: 120_000,
  };
  return new ApiClient(config, { budget: new RequestBudget(config.rate), random: () => 0 });
}

describe('network failures that waiting does not fix', () => {
  it('an untrusted certificate fails on the first connection, saying what to check', async (ctx) => {
    needs(ctx, 'openssl');
    const tls = selfSigned();
    let connections = 0;
    const server = createServer(tls, (_req, res) => res.end('{"data":[]}'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c = client(`https://localhost:${(server.address() as AddressInfo).port}`);
    try {
      // Not retried, so not waited on: one request, one connection (counted below, not timed).
      const err = await c.listCampaigns().catch((e) => e);
      expect(err).toBeInstanceOf(NetworkError);
      expect(err.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
      // Node 24 adds its own hint (--use-system-ca) to the certificate error: kept, it is good advice.
      expect(err.message).toMatch(
        /^DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate(; if the root CA is installed locally, try running Node\.js with --use-system-ca)?; not retried: .* — GET \/v1\/campaigns$/,
      );
      expect(err.message).toMatch(/NODE_EXTRA_CA_CERTS/);
      expect(c.requests).toBe(1);
      expect(connections).toBe(1);
    } finally {
      await c.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('an unknown host (.invalid never resolves) is tried twice at most, saying what to check', async () => {
    const c = client('https://campaign-sync-test.invalid');
    try {
      const err = await c.listCampaigns().catch((e) => e);
      expect(err).toBeInstanceOf(NetworkError);
      expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(err.code);
      expect(err.message).toMatch(/check the host name in --base-url and DNS/);
      expect(c.requests).toBe(2);
    } finally {
      await c.close();
    }
  });
});

/** A loopback server on port 0 made by `make`, closed after `body`. */
async function withServer(make: () => Server, body: (port: number) => Promise<void>): Promise<void> {
  const server = make();
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body((server.address() as AddressInfo).port);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

describeWith('openssl', 'the wrong scheme for the port: http:// to TLS, https:// to plain HTTP', () => {
  const tls = selfSigned();

  it("http:// to Node's https server (it closes without a byte): named at once, not retried 6 times", async () => {
    let requests = 0;
    await withServer(
      () => createServer(tls, (_req, res) => res.end(`${requests++}`)),
      async (port) => {
        const c = client(`http://127.0.0.1:${port}`);
        try {
          const err = await c.listCampaigns().catch((e) => e);
          expect(err).toBeInstanceOf(NetworkError);
          expect(err.message).toMatch(
            new RegExp(
              `^127\\.0\\.0\\.1:${port} closed the connection without an HTTP answer, and it speaks TLS there; not retried: use https:// in --base-url — GET /v1/campaigns$`,
            ),
          );
          expect(c.requests).toBe(1);
        } finally {
          await c.close();
        }
      },
    );
    expect(requests).toBe(0);
  });

  it('http:// to a server that answers with a TLS alert: named at once from its bytes', async () => {
    // What an OpenSSL server may send to plain HTTP: a fatal protocol_version alert record.
    await withServer(
      () => createNetServer((socket) => socket.once('data', () => socket.end(Buffer.from('15030100020246', 'hex')))),
      async (port) => {
        const c = client(`http://127.0.0.1:${port}`);
        try {
          const err = await c.listCampaigns().catch((e) => e);
          expect(err.message).toMatch(
            /127\.0\.0\.1:\d+ answered with TLS, not HTTP.*; not retried: use https:\/\/ in --base-url — GET \/v1\/campaigns$/,
          );
          expect(c.requests).toBe(1);
        } finally {
          await c.close();
        }
      },
    );
  });

  it('a plain-http server closing a connection without a byte is still retried when the port does not speak TLS', async () => {
    let connections = 0;
    await withServer(
      () =>
        createNetServer((socket) =>
          ++connections === 1 ? socket.end() : socket.end('HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"data":[]}'),
        ),
      async (port) => {
        const c = client(`http://127.0.0.1:${port}`);
        try {
          await expect(c.listCampaigns()).resolves.toEqual([]);
        } finally {
          await c.close();
        }
      },
    );
  });

  it("http:// to nginx's or Go's HTTPS port (a 400 saying so): the message says to use https://", async () => {
    await withServer(
      () =>
        createHttpServer((_req, res) => {
          res.writeHead(400, { 'content-type': 'text/html' });
          res.end('<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head></html>');
        }),
      async (port) => {
        const c = client(`http://127.0.0.1:${port}`);
        try {
          const err = await c.listCampaigns().catch((e) => e);
          expect(err).toBeInstanceOf(ApiError);
          expect(err.message).toMatch(/^400 .*; the port speaks HTTPS: use https:\/\/ in --base-url — GET \/v1\/campaigns$/);
        } finally {
          await c.close();
        }
      },
    );
  });

  it('https:// to a plain-http server: one line naming the likely cause, without OpenSSL internals, not retried', async () => {
    let requests = 0;
    await withServer(
      () => createHttpServer((_req, res) => res.end(`${requests++}`)),
      async (port) => {
        const c = client(`https://127.0.0.1:${port}`);
        try {
          const err = await c.listCampaigns().catch((e) => e);
          expect(err).toBeInstanceOf(NetworkError);
          expect(err.message).not.toMatch(/openssl|ssl3_|\.c:\d+|\\n/i);
          expect(err.message).toMatch(
            new RegExp(
              `^ERR_SSL_\\w+: 127\\.0\\.0\\.1:${port} answered, but not in TLS \\(.+\\); not retried: .*does not speak HTTPS.*check the port in --base-url.* — GET /v1/campaigns$`,
            ),
          );
          expect(c.requests).toBe(1);
        } finally {
          await c.close();
        }
      },
    );
  });

  it('the CLI: http:// to an https simulator exits 5 at once with the hint', async () => {
    const s = await sim({ campaigns: 1, records: 1, tls });
    const url = s.url.replace('https://', 'http://');
    const r = await runCli(['campaigns', '--base-url', url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(r.code).toBe(5);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/speaks TLS there; not retried: use https:\/\/ in --base-url — GET \/v1\/campaigns$/),
    ]);
    expect(r.stderr).not.toContain(s.apiKey);
  });
});

describe('cli: a long Retry-After does not hold the lock', () => {
  const rateLimited = () => sim({ campaigns: 2, records: 5, rateLimit: { count: 1, windowMs: 3_000_000 } });

  it('pull fails every stream at once naming the Retry-After (exit 5), with one request each', async () => {
    const s = await rateLimited();
    // A pull that waited out the 3000 s Retry-After would be stopped by the timeout: interrupted, not exit 5.
    const r = await runCli(['pull', '--db', join(tempDir(), 'm.db'), '--quiet'], {
      env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
      timeoutMs: 50_000,
    });
    expect(r.code).toBe(5);
    expect(s.stats.requests).toBe(3);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(
        /^error: .+ \((session|role DETAILED)\): 429 Too many requests; Retry-After 3000 s is longer than --max-retry-wait 2m: gave up.* — GET \/v1\/campaigns\/(session|role)\/results \(campaign [0-9a-f-]+\) \[request_id .+\]$/,
      );
    }
  });

  it("the backoff waits on the run's clock: a pull through 503s with Retry-After 45 s ends at once on a fake clock, having waited each 45 s", async () => {
    const s = await sim({ campaigns: 2, records: 30, faults: { 503: 0.3 }, faultRetryAfterS: 45 });
    const { r, clock } = await pullOnFakeClock(s, Date.now());
    expect(r.code, r.stderr).toBe(0);
    expect(s.stats.byStatus[503]).toBeGreaterThan(2);
    // One wait of the Retry-After for each 503 (the budget's own waits, if any, are shorter).
    expect(clock.sleeps.filter((ms) => ms === 45_000).length).toBe(s.stats.byStatus[503]);
    expect(JSON.parse(r.stdout).records).toBe(servedRecords(s, 30).size);
  });

  it("a 429 with Retry-After 60 s waits 60 s of the run's clock, and holds every stream back as long: a pull ends at once on a fake clock", async () => {
    const s = await sim({ campaigns: 3, records: 20, faults: { 429: 0.3 }, faultRetryAfterS: 60 });
    const start = Date.now();
    const { r, clock } = await pullOnFakeClock(s, start);
    expect(r.code, r.stderr).toBe(0);
    const limited = s.stats.byStatus[429] ?? 0;
    expect(limited).toBeGreaterThan(2);
    // Each 429's retry waits its 60 s; the budget's pause holds the other streams back no longer.
    expect(clock.sleeps.filter((ms) => ms === 60_000).length).toBeGreaterThanOrEqual(limited);
    expect(Math.max(...clock.sleeps)).toBe(60_000);
    expect(clock.now() - start).toBeGreaterThanOrEqual(60_000);
    expect(JSON.parse(r.stdout).records).toBe(servedRecords(s, 20).size);
  });

  it("without a Retry-After, the exponential backoff waits on the run's clock: one wait a 500, 0.25-0.5 s at a first retry, never over the 30 s cap", async () => {
    const s = await sim({ campaigns: 2, records: 30, faults: { 500: 0.3 } });
    const { r, clock } = await pullOnFakeClock(s, Date.now());
    expect(r.code, r.stderr).toBe(0);
    const failed = s.stats.byStatus[500] ?? 0;
    expect(failed).toBeGreaterThan(2);
    // Far fewer requests than the budget allows: every wait is a retry's.
    expect(clock.sleeps).toHaveLength(failed);
    for (const ms of clock.sleeps) {
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThanOrEqual(30_000);
    }
    expect(clock.sleeps.some((ms) => ms <= 500)).toBe(true);
    expect(JSON.parse(r.stdout).records).toBe(servedRecords(s, 30).size);
  });

  it('--max-retry-wait is a checked flag (exit 2 naming it)', async () => {
    const r = await runCli(['pull', '--db', join(tempDir(), 'm.db'), '--max-retry-wait', 'forever'], {
      env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-retry-wait: "forever" is not a duration/);
  });
});

describe('Retry-After as RFC 9110 defines it', () => {
  it('an HTTP-date or a non-negative integer of seconds; anything else is absent (the backoff)', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    // -1 and 1.5 were read by Date.parse as dates in 2001: "retry in 0 ms".
    for (const bad of ['-1', '1.5', '+5', '1e10', 'abc', '2026-11-22', '2026-11-22T10:00:30Z', '30 seconds']) {
      expect({ bad, ms: parseRetryAfter(bad, now) }).toEqual({ bad, ms: undefined });
    }
    expect(parseRetryAfter(' 5 ', now)).toBe(5000);
    expect(parseRetryAfter('0', now)).toBe(0);
    // The three date forms of RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 and asctime forms.
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sunday, 22-Nov-26 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun Nov 22 10:00:30 2026', now)).toBe(30_000);
    expect(parseRetryAfter('Sun Nov  2 10:00:30 2026', now)).toBe(0);
  });
});

/** A pull of every stream of `s` on a fake clock starting at `start` (retries allowed generously). */
async function pullOnFakeClock(s: Awaited<ReturnType<typeof sim>>, start: number) {
  const clock = fakeClock(start);
  const db = join(tempDir(), 'm.db');
  const r = await runCli(['pull', '--db', db, '--base-url', s.url, '--page-size', '5', '--max-retries', '20', '--json'], {
    env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
    clock,
  });
  return { r, clock };
}
