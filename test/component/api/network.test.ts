/**
 * Networks people have: a forward proxy (a real proxy process on loopback), a private CA (a TLS
 * simulator with a certificate made here by openssl), gzip over real HTTP, and the User-Agent.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { ApiClient } from '../../../src/api/client.js';
import { proxyFor } from '../../../src/api/dispatcher.js';
import { Pool } from '../../../src/api/undici.js';
import { AbortedError, ExitCode, NetworkError } from '../../../src/errors.js';
import { atFileEnd } from '../../helpers/file-end.js';
import { cli, clientConfig, sim, startCli, tempDir } from '../../helpers/index.js';
import { PROXIED_HOST, startProxy, viaProxyName } from '../../helpers/proxy.js';
import { runCli } from '../../helpers/run-cli.js';
import { selfSigned } from '../../helpers/tls.js';
import { describeWith } from '../../helpers/tools.js';

const KEY = 'net-secret-key-123';
/** No proxy setting of the tester's shell leaks in; each test sets its own. */
const NO_PROXY_ENV = {
  HTTP_PROXY: undefined,
  HTTPS_PROXY: undefined,
  NO_PROXY: undefined,
  http_proxy: undefined,
  https_proxy: undefined,
  no_proxy: undefined,
};

/** A pull in-process; in a process of its own when given NODE_EXTRA_CA_CERTS, which Node reads as it starts. */
function pull(url: string, env: Record<string, string | undefined> = {}, extra: string[] = []) {
  const db = join(tempDir(), 'net.db');
  const run = env.NODE_EXTRA_CA_CERTS === undefined ? runCli : cli;
  return run(['pull', '--base-url', url, '--db', db, '--max-retries', '0', ...extra], {
    env: { ...NO_PROXY_ENV, CAMPAIGN_SYNC_API_KEY: KEY, ...env },
  });
}

/**
 * The simulator under PROXIED_HOST, which only the test proxy resolves (a loopback URL never goes
 * through a proxy), once it is sure the client will hand it to the proxy that `env` names: the client
 * itself must never ask DNS about a made-up name.
 */
function proxied(url: string, env: Record<string, string | undefined>): string {
  const named = viaProxyName(url);
  expect(proxyFor(new URL(named), { ...NO_PROXY_ENV, ...env })).toBeDefined();
  return named;
}
/** Plain http:// to PROXIED_HOST is off loopback: allowed explicitly, as a user behind a proxy would. */
const INSECURE = ['--allow-insecure-http'];

describe('proxies', () => {
  it('HTTP_PROXY sends every request through the proxy, in a CONNECT tunnel (the key never in clear)', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 2, records: 30 });
    const proxy = await startProxy();
    const env = { HTTP_PROXY: proxy.url };
    const r = await pull(proxied(s.url, env), env, INSECURE);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(s.stats.requests).toBeGreaterThan(0);
    await proxy.settled();
    expect(proxy.seen.length).toBeGreaterThan(0);
    expect(proxy.seen.every((l) => l.kind === 'connect' && l.target === `127.0.0.1:${s.port}` && !l.authorization)).toBe(true);
    expect(proxy.seen.every((l) => l.asked === `${PROXIED_HOST}:${s.port}`)).toBe(true);
  });

  it('a loopback base URL never goes through the proxy, whatever the variables say: the proxy would read the key', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 2, records: 10 });
    const proxy = await startProxy();
    const all = { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, http_proxy: proxy.url, NO_PROXY: 'example.com' };
    for (const host of ['127.0.0.1', 'localhost']) {
      const before = s.stats.requests;
      const r = await pull(s.url.replace('127.0.0.1', host), all);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(s.stats.requests).toBeGreaterThan(before);
    }
    await proxy.settled();
    expect(proxy.seen).toEqual([]);
  });

  it('lower-case http_proxy too; NO_PROXY=127.0.0.1 goes straight to the service', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 2, records: 10 });
    const proxy = await startProxy();
    const lower = await pull(proxied(s.url, { http_proxy: proxy.url }), { http_proxy: proxy.url }, INSECURE);
    expect(lower.code).toBe(0);
    await proxy.settled();
    const through = proxy.seen.length;
    expect(through).toBeGreaterThan(0);
    const before = s.stats.requests;
    const bypass = await pull(s.url, { HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    expect(bypass.code).toBe(0);
    expect(s.stats.requests).toBeGreaterThan(before);
    await proxy.settled();
    expect(proxy.seen.length).toBe(through);
  });

  it('a proxy that answers 500 is a clear error naming the proxy, never the key', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 5 });
    const proxy = await startProxy('refuse');
    const r = await pull(proxied(s.url, { HTTP_PROXY: proxy.url }), { HTTPS_PROXY: undefined, HTTP_PROXY: proxy.url }, INSECURE);
    expect(r.code).toBe(ExitCode.unavailable);
    expect(r.stderr).toContain(`proxy ${proxy.url} (HTTP_PROXY) answered 500 to CONNECT`);
    expect(r.stderr + r.stdout).not.toContain(KEY);
    expect(s.stats.requests).toBe(0);
  });

  it('a proxy that wants credentials (407) fails at once, not retried, saying what to check', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 5 });
    const proxy = await startProxy('auth');
    const db = join(tempDir(), 'auth.db');
    const r = await runCli(['pull', '--base-url', proxied(s.url, { http_proxy: proxy.url }), '--db', db, ...INSECURE], {
      env: { ...NO_PROXY_ENV, CAMPAIGN_SYNC_API_KEY: KEY, http_proxy: proxy.url },
    });
    expect(r.code).toBe(ExitCode.unavailable);
    expect(r.stderr).toContain(`proxy ${proxy.url} (http_proxy) answered 407 to CONNECT; not retried: check HTTPS_PROXY`);
    await proxy.settled();
    expect(proxy.seen).toHaveLength(1);
  });

  it('a proxy that refuses connections names the proxy', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 5 });
    const proxy = await startProxy();
    // Gone, not given time to go: its port refuses from the moment its process has exited.
    await proxy.stop();
    const r = await pull(proxied(s.url, { HTTP_PROXY: proxy.url }), { HTTP_PROXY: proxy.url }, INSECURE);
    expect(r.code).toBe(ExitCode.unavailable);
    expect(r.stderr).toMatch(new RegExp(`ECONNREFUSED.*through proxy ${proxy.url.replace(/[.]/g, '\\.')} \\(HTTP_PROXY\\)`));
    expect(r.stderr).not.toContain(KEY);
  });
});

/** A proxy that accepts connections and never answers, not even to CONNECT. */
async function silentProxy(): Promise<{ url: string; connections: () => number; allClosed: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    // Read (and drop) what comes, so the client's end of the connection is seen.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  atFileEnd(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const allClosed = async () => {
    while (connections === 0 || sockets.size > 0) await new Promise((r) => setTimeout(r, 20));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, allClosed };
}

/** Resolves to how long `p` took, or to Infinity after `ms`. */
async function timed(p: Promise<unknown>, ms: number): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<number>((resolve) => {
    timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), ms);
  });
  const took = await Promise.race([p.then(() => Date.now() - started), late]);
  clearTimeout(timer);
  return took;
}

describe('a connection that never completes (a proxy silent on CONNECT)', () => {
  async function stuckClient(timeoutMs: number, signal?: AbortSignal) {
    const proxy = await silentProxy();
    const env = { HTTP_PROXY: proxy.url };
    const config = clientConfig(proxied('http://127.0.0.1:9', env), { timeoutMs, maxRetries: 0 });
    return { proxy, client: new ApiClient(config, { budget: new RequestBudget(config.rate), env, signal }) };
  }

  it('--timeout bounds the CONNECT too, and closing the client does not wait for it', async () => {
    const { proxy, client } = await stuckClient(500);
    const failed = client.listCampaigns().catch((err: unknown) => err);
    expect(await timed(failed, 5000)).toBeLessThan(2000);
    const err = await failed;
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).toBe('TIMEOUT');
    expect((err as Error).message).toContain('no complete answer within 500 ms');
    expect(proxy.connections()).toBe(1);
    expect(await timed(client.close(), 5000)).toBeLessThan(1000);
  });

  it("a TCP handshake that never completes (a full SYN queue) is bounded by --timeout, not undici's 10 s", async () => {
    // undici's Pool with a connector that never calls back: the handshake that never ends, on no network at all.
    const stuck = new Pool('http://127.0.0.1:9', { connect: () => {} });
    const config = clientConfig('http://127.0.0.1:9', { timeoutMs: 500, maxRetries: 0 });
    const client = new ApiClient(config, { budget: new RequestBudget(config.rate), dispatcher: stuck });
    const failed = client.listCampaigns().catch((err: unknown) => err);
    expect(await timed(failed, 5000)).toBeLessThan(2000);
    expect((await failed) as Error).toBeInstanceOf(NetworkError);
    expect(((await failed) as Error).message).toContain('no complete answer within 500 ms');
    await client.close();
    await stuck.destroy();
  });

  it('undici gives up the CONNECT after --timeout too: a watch whose proxy recovers is not held ~300 s by it', async () => {
    const { proxy, client } = await stuckClient(500);
    const failed = client.listCampaigns().catch((err: unknown) => err);
    expect(await failed).toBeInstanceOf(NetworkError);
    // No close(): the connection to the proxy is dropped by undici's own timer, not by ours.
    expect(await timed(proxy.allClosed(), 5000)).toBeLessThan(4000);
    await client.close();
  });

  it("the caller's signal ends it at once, and closing the client does not wait for it", async () => {
    const controller = new AbortController();
    const { proxy, client } = await stuckClient(600_000, controller.signal);
    const failed = client.listCampaigns().catch((err: unknown) => err);
    while (proxy.connections() === 0) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    expect(await timed(failed, 5000)).toBeLessThan(1000);
    expect(await failed).toBeInstanceOf(AbortedError);
    expect(await timed(client.close(), 5000)).toBeLessThan(1000);
  });

  it('the CLI: --timeout 1s ends `campaigns` in about a second, exit 5, saying so', async () => {
    const proxy = await silentProxy();
    const env = { ...NO_PROXY_ENV, CAMPAIGN_SYNC_API_KEY: KEY, HTTP_PROXY: proxy.url };
    const url = proxied('http://127.0.0.1:9', env);
    const started = Date.now();
    const args = ['campaigns', '--base-url', url, '--db', join(tempDir(), 'c.db'), '--max-retries', '0', '--timeout', '1s', ...INSECURE];
    const r = await runCli(args, { env, timeoutMs: 20_000 });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(r.code).toBe(ExitCode.unavailable);
    expect(r.stderr).toContain('no complete answer within 1000 ms');
    expect(r.stderr).not.toContain(KEY);
  });

  for (const [command, signal] of [
    ['campaigns', 'SIGTERM'],
    ['watch', 'SIGINT'],
  ] as const) {
    it(`the CLI: one ${signal} stops \`${command}\` at once, with the code a signal gets (0)`, async () => {
      const proxy = await silentProxy();
      const env = { ...NO_PROXY_ENV, CAMPAIGN_SYNC_API_KEY: KEY, HTTP_PROXY: proxy.url };
      const url = proxied('http://127.0.0.1:9', env);
      const run = startCli([command, '--base-url', url, '--db', join(tempDir(), 's.db'), '--timeout', '10m', ...INSECURE], { env });
      while (proxy.connections() === 0 && run.child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
      run.child.kill(signal);
      const took = await timed(run.exited, 10_000);
      if (took === Number.POSITIVE_INFINITY) run.child.kill('SIGKILL');
      expect(took).toBeLessThan(5000);
      expect((await run.exited).code).toBe(ExitCode.ok);
      expect(run.stderr()).toContain('interrupted');
    });
  }
});

describeWith('openssl', 'a private CA', () => {
  const files = selfSigned(['IP:127.0.0.1', 'DNS:localhost', `DNS:${PROXIED_HOST}`]);

  it('NODE_EXTRA_CA_CERTS makes a pull over https to a self-signed service work; without it, a TLS error not retried', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 2, records: 10, tls: { cert: readFileSync(files.cert), key: readFileSync(files.key) } });
    expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:/);
    const ok = await pull(s.url, { NODE_EXTRA_CA_CERTS: files.cert });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const requests = s.stats.requests;
    expect(requests).toBeGreaterThan(0);
    const bad = await cli(['pull', '--base-url', s.url, '--db', join(tempDir(), 'x.db')], {
      env: { ...NO_PROXY_ENV, CAMPAIGN_SYNC_API_KEY: KEY },
    });
    expect(bad.code).toBe(ExitCode.unavailable);
    expect(bad.stderr).toMatch(/SELF_SIGNED|self-signed/i);
    expect(bad.stderr).toContain('NODE_EXTRA_CA_CERTS');
    expect(s.stats.requests).toBe(requests);
  });

  it('through a proxy too: HTTPS_PROXY tunnels to the TLS service', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 5, tls: { cert: readFileSync(files.cert), key: readFileSync(files.key) } });
    const proxy = await startProxy();
    const r = await pull(proxied(s.url, { HTTPS_PROXY: proxy.url }), { NODE_EXTRA_CA_CERTS: files.cert, HTTPS_PROXY: proxy.url });
    expect(r.code).toBe(0);
    await proxy.settled();
    expect(proxy.seen.length).toBeGreaterThan(0);
    expect(proxy.seen.every((l) => l.kind === 'connect')).toBe(true);
  });

  it('HTTPS_PROXY=https:// for a plain-http proxy (a common slip): names the proxy and says to write http://, not retried', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 5, tls: { cert: readFileSync(files.cert), key: readFileSync(files.key) } });
    const proxy = await startProxy();
    const wrong = proxy.url.replace(/^http:/, 'https:');
    const r = await pull(proxied(s.url, { HTTPS_PROXY: wrong }), { NODE_EXTRA_CA_CERTS: files.cert, HTTPS_PROXY: wrong });
    expect(r.code).toBe(ExitCode.unavailable);
    expect(r.stderr).toContain(`the proxy ${wrong} (HTTPS_PROXY) or ${PROXIED_HOST}`);
    expect(r.stderr).toContain('most proxies speak plain HTTP: write http:// in the proxy variable');
    // It was the service's port that was blamed: "check the port in --base-url" first.
    expect(r.stderr).not.toMatch(/not retried: that port does not speak HTTPS/);
    expect(r.stderr).not.toMatch(/^retry/m);
  });

  it('simulate --tls-cert/--tls-key serves https', async () => {
    const run = startCli(['simulate', '--port', '0', '--tls-cert', files.cert, '--tls-key', files.key]);
    await run.waitFor(/listening on https:\/\/127\.0\.0\.1:\d+/);
    const url = /listening on (https:\/\/127\.0\.0\.1:\d+)/.exec(run.stdout() + run.stderr())?.[1] as string;
    const r = await pull(url, { NODE_EXTRA_CA_CERTS: files.cert, CAMPAIGN_SYNC_API_KEY: 'demo-key' });
    run.child.kill('SIGTERM');
    await run.exited;
    expect(r.code).toBe(0);
    const half = await runCli(['simulate', '--tls-cert', files.cert]);
    expect(half.code).toBe(ExitCode.usage);
    expect(half.stderr).toContain('--tls-cert and --tls-key go together');
  });

  it.skipIf(process.platform === 'win32')(
    'simulate --tls-cert naming a named pipe: exit 2 at once (it blocked, signals included)',
    async () => {
      const pipe = join(tempDir(), 'cert.pem');
      execFileSync('mkfifo', [pipe]);
      const r = await cli(['simulate', '--port', '0', '--tls-cert', pipe, '--tls-key', files.key], { timeoutMs: 15_000 });
      expect(r.stderr).toBe(`campaign-sync: --tls-cert: ${pipe} is not a regular file\n`);
      expect(r.code).toBe(ExitCode.usage);
    },
  );
});

describe('compression and User-Agent over real HTTP', () => {
  it('--compression gzip: the simulator compresses, the mirror is the same, fewer bytes on the wire', async () => {
    const plain = await sim({ apiKey: KEY, campaigns: 2, records: 200 });
    const zipped = await sim({ apiKey: KEY, campaigns: 2, records: 200 });
    const off = await pull(plain.url, {}, ['--compression', 'off']);
    const on = await pull(zipped.url, {}, ['--compression', 'gzip']);
    expect([off.code, on.code]).toEqual([0, 0]);
    expect(plain.stats.gzipped).toBe(0);
    expect(zipped.stats.gzipped).toBe(zipped.stats.requests);
    expect(zipped.stats.bodyBytes * 3).toBeLessThan(plain.stats.bodyBytes);
    const rows = (text: string) => /\d[\d,]* (new|rows|records)/.exec(text)?.[0];
    expect(rows(off.stdout + off.stderr)).toMatch(/^400 records$/);
    expect(rows(on.stdout + on.stderr)).toBe(rows(off.stdout + off.stderr));
  });

  it('--help shows --compression and its default', async () => {
    const help = await runCli(['pull', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(
      '--compression <mode> gzip response bodies: auto (all but loopback hosts), gzip or off (default: auto)',
    );
  });

  it('auto does not compress on loopback', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 1, records: 10 });
    expect((await pull(s.url)).code).toBe(0);
    expect(s.stats.gzipped).toBe(0);
  });

  it('every request carries User-Agent campaign-sync/<version> (node <version>)', async () => {
    const s = await sim({ apiKey: KEY, campaigns: 2, records: 10 });
    expect((await pull(s.url)).code).toBe(0);
    const version = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    expect(s.stats.userAgents).toEqual({ [`campaign-sync/${version} (node ${process.versions.node})`]: s.stats.requests });
  });
});
