/**
 * gzip bodies through MockAgent: inflated and parsed, the cap applied to the inflated size (a gzip
 * bomb fails cleanly), unknown codings and corrupt streams are clear errors; Accept-Encoding is sent
 * only when asked. Also the proxy choice (api/dispatcher.ts) and --compression auto per host.
 */
import { gzipSync } from 'node:zlib';
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { createRoute, noProxyMatches, proxyFor } from '../../../src/api/dispatcher.js';
import { resolveApiConfig } from '../../../src/config/config.js';
import { ApiError } from '../../../src/errors.js';
import { CAMPAIGN, mockClient, ORIGIN } from '../../helpers/mock.js';

const page = { data: [{ order_index: 1, id: 'r1', session_id: 's1', created_at: '2026-01-01T00:00:00Z' }], has_more: false };

function service(body: Buffer | string, headers: Record<string, string>) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const seen: Array<Record<string, string>> = [];
  agent
    .get(ORIGIN)
    .intercept({ path: () => true, method: 'GET' })
    .reply((opts) => {
      seen.push(opts.headers as Record<string, string>);
      return { statusCode: 200, data: body, responseOptions: { headers: { 'content-type': 'application/json', ...headers } } };
    })
    .persist();
  return { agent, seen };
}

const query = { endpoint: 'session' as const, campaignId: CAMPAIGN, limit: 100 };

describe('gzip bodies', () => {
  it('inflates a gzip body and asks for gzip when configured', async () => {
    const zipped = gzipSync(JSON.stringify(page));
    const { agent, seen } = service(zipped, { 'content-encoding': 'gzip' });
    const counter = { requests: 0, bytes: 0 };
    const { page: got } = await mockClient(agent, { gzip: true }).resultsPage(query, counter);
    expect(got.data).toEqual(page.data);
    expect(seen[0]?.['accept-encoding']).toBe('gzip');
    expect(counter.bytes).toBe(zipped.length);
  });

  it('sends no Accept-Encoding when compression is off', async () => {
    const { agent, seen } = service(JSON.stringify(page), {});
    await mockClient(agent, { gzip: false }).resultsPage(query);
    expect(seen[0]?.['accept-encoding']).toBeUndefined();
  });

  // The 100 MiB bomb is in the soak tier (test/soak/api/gzip-bomb.test.ts): 8 MiB is over the cap too.
  it('a gzip bomb (8 MiB of zeros) is an invalid-body error at the cap, not an out-of-memory', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(64 * 1024);
    const { agent } = service(bomb, { 'content-encoding': 'gzip' });
    const err = await mockClient(agent, { gzip: true }, { maxBodyBytes: 1024 * 1024 })
      .resultsPage(query)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).kind).toBe('invalid');
    expect((err as Error).message).toContain('(inflated) is over the 1048576-byte cap');
  });

  it('an unknown content-encoding is a clear error', async () => {
    const { agent } = service('xx', { 'content-encoding': 'br' });
    await expect(mockClient(agent, { gzip: true }).resultsPage(query)).rejects.toThrow(
      /content-encoding "br", which campaign-sync cannot decode/,
    );
  });

  it('a corrupt gzip body is an invalid-body error', async () => {
    const { agent } = service(Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    const err = await mockClient(agent, { gzip: true, maxRetries: 0 })
      .resultsPage(query)
      .catch((e: unknown) => e);
    expect((err as ApiError).kind).toBe('invalid');
    expect((err as Error).message).toMatch(/gzip body cannot be inflated/);
  });
});

describe('proxy choice', () => {
  const https = new URL('https://api.example.com');
  it('follows undici: lower case first, HTTPS_PROXY falls back to HTTP_PROXY, NO_PROXY hosts, suffixes, ports and *', () => {
    expect(proxyFor(https, {})).toBeUndefined();
    expect(proxyFor(https, { HTTP_PROXY: 'http://p:1' })?.name).toBe('HTTP_PROXY');
    expect(proxyFor(https, { HTTPS_PROXY: 'http://p:2', https_proxy: 'http://p:3' })?.value).toBe('http://p:3');
    expect(proxyFor(new URL('http://127.0.0.1:9'), { HTTPS_PROXY: 'http://p:2' })).toBeUndefined();
    expect(noProxyMatches(https, 'example.com')).toBe(true);
    expect(noProxyMatches(https, '.example.com')).toBe(true);
    expect(noProxyMatches(https, 'ample.com')).toBe(false);
    expect(noProxyMatches(https, 'api.example.com:8443')).toBe(false);
    expect(noProxyMatches(https, 'other, api.example.com:443')).toBe(true);
    expect(noProxyMatches(https, '*')).toBe(true);
  });

  it('a Pool without a proxy; the proxy agent, named without its password, with one', async () => {
    const direct = createRoute(https, {});
    expect(direct.dispatcher.constructor.name).toBe('Pool');
    expect(direct.proxy).toBeUndefined();
    const proxied = createRoute(https, { HTTPS_PROXY: 'http://user:hunter2@proxy.corp:3128' });
    expect(proxied.dispatcher.constructor.name).toBe('EnvHttpProxyAgent');
    expect(proxied.proxy).toBe('http://proxy.corp:3128 (HTTPS_PROXY)');
    await Promise.all([direct.dispatcher.close(), proxied.dispatcher.close()]);
    expect(() => createRoute(https, { HTTPS_PROXY: 'not a url :: hunter2' })).toThrow(/^HTTPS_PROXY is not a proxy URL/);
  });

  it('never sends a loopback target through a proxy, whatever the variables say (as Go does): the proxy would read the key', async () => {
    const env = { HTTP_PROXY: 'http://p:1', HTTPS_PROXY: 'http://p:2', NO_PROXY: 'example.org' };
    for (const url of [
      'http://127.0.0.1:9',
      'http://127.8.9.10:9',
      'http://localhost:9',
      'http://LOCALHOST',
      'http://[::1]:9',
      'https://localhost:9',
    ]) {
      expect(proxyFor(new URL(url), env), url).toBeUndefined();
      const route = createRoute(new URL(url), env);
      expect(route.dispatcher.constructor.name, url).toBe('Pool');
      expect(route.proxy).toBeUndefined();
      await route.dispatcher.close();
    }
    // Names that only look local still go through it (no DNS is asked here).
    for (const url of ['http://api.localhost:9', 'http://localhost.example.com:9', 'http://128.0.0.1:9']) {
      expect(proxyFor(new URL(url), env)?.name, url).toBe('HTTP_PROXY');
    }
  });

  it('NO_PROXY takes bare IPv6 addresses (::1), bracketed ones and [addr]:port', () => {
    const v6 = new URL('https://[2001:db8::1]:8443');
    expect(noProxyMatches(v6, '2001:db8::1')).toBe(true);
    expect(noProxyMatches(v6, '2001:DB8:0:0:0:0:0:1')).toBe(true);
    expect(noProxyMatches(v6, '[2001:db8::1]')).toBe(true);
    expect(noProxyMatches(v6, '[2001:db8::1]:8443')).toBe(true);
    expect(noProxyMatches(v6, '[2001:db8::1]:443')).toBe(false);
    expect(noProxyMatches(v6, '2001:db8::2')).toBe(false);
    expect(noProxyMatches(v6, 'db8::1')).toBe(false);
    expect(noProxyMatches(new URL('http://[::1]:8080'), '::1')).toBe(true);
    expect(proxyFor(v6, { HTTPS_PROXY: 'http://p:2', NO_PROXY: 'example.com, 2001:db8::1' })).toBeUndefined();
    expect(proxyFor(v6, { HTTPS_PROXY: 'http://p:2', NO_PROXY: 'example.com, 2001:db8::2' })?.name).toBe('HTTPS_PROXY');
  });
});

describe('--compression', () => {
  const env = { CAMPAIGN_SYNC_API_KEY: 'k' };
  it('auto asks for gzip from any host but loopback; gzip and off are what they say', () => {
    expect(resolveApiConfig({ baseUrl: 'https://api.example.com' }, env).gzip).toBe(true);
    expect(resolveApiConfig({ baseUrl: 'http://127.0.0.1:8080' }, env).gzip).toBe(false);
    expect(resolveApiConfig({ baseUrl: 'http://localhost:8080', compression: 'gzip' }, env).gzip).toBe(true);
    expect(resolveApiConfig({ baseUrl: 'https://api.example.com', compression: 'OFF' }, env).gzip).toBe(false);
    expect(() => resolveApiConfig({ baseUrl: 'https://api.example.com', compression: 'br' }, env)).toThrow(
      '--compression: must be auto or gzip or off',
    );
  });
});
