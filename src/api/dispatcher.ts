/**
 * How requests reach the service: straight to the origin over one keep-alive Pool (the fast path),
 * or, when HTTPS_PROXY / HTTP_PROXY (or their lower-case forms) name a proxy for the origin and
 * NO_PROXY does not exempt it, through undici's EnvHttpProxyAgent. The proxy agent opens a CONNECT
 * tunnel for every origin, https or not, so the key is never sent to the proxy in clear.
 *
 * The proxy is chosen here with undici's own rules (lower case first; HTTPS_PROXY falls back to
 * HTTP_PROXY; NO_PROXY entries are host names, domain suffixes, `host:port`, or `*`), so an error can
 * name the proxy it went through, with two differences: a loopback target never goes through a proxy
 * (as Go's ProxyFromEnvironment: a proxy that is handed `http://127.0.0.1` reads the key, since it is
 * the tunnel's end), and a bare IPv6 NO_PROXY entry (`::1`) is an address, not `host:port`. The
 * decision is made once, here: the proxy agent is given no NO_PROXY of its own.
 */
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';
import { MAX_TIMER_MS } from '../core/clock.js';
import { currentIo } from '../core/io.js';
import { isLoopbackHost } from '../core/loopback.js';
import { UsageError } from '../errors.js';
import { envHttpProxyAgent, Pool } from './undici.js';

/**
 * Connections to the service at most. Requests wait on the budget, not on sockets: 4 streams with a
 * prefetch each and a retry in flight fit well within 16, and 16 is far below any server's limit.
 */
const MAX_CONNECTIONS = 16;
/** An idle connection is kept this long: enough for the pages of a pass, shorter than a watch interval. */
const KEEP_ALIVE_MS = 30_000;
/** undici's own wait for a proxy's answer to CONNECT (its headers timeout), which --timeout only lowers. */
const PROXY_ANSWER_MS = 300_000;

export interface Route {
  dispatcher: Dispatcher;
  /** The proxy's URL without any user name or password, e.g. `http://proxy.corp:3128 (HTTPS_PROXY)`. */
  proxy?: string | undefined;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

function firstSet(env: NodeJS.ProcessEnv, names: string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value) return { name, value };
  }
  return undefined;
}

/** A NO_PROXY entry as host (IPv6 in brackets, in URL form) and port (0: any). */
function noProxyEntry(entry: string): { host: string; port: number } {
  // `::1` or `2001:db8::1` alone: an address whose last group looks like a port, but is not one.
  if (isIP(entry) === 6) return { host: ipv6Host(entry), port: 0 };
  const parsed = entry.match(/^(.+):(\d+)$/);
  const host = parsed ? (parsed[1] as string) : entry;
  const port = parsed ? Number.parseInt(parsed[2] as string, 10) : 0;
  const bracketed = /^\[(.*)\]$/.exec(host);
  if (bracketed && isIP(bracketed[1] as string) === 6) return { host: ipv6Host(bracketed[1] as string), port };
  return { host: host.replace(/^\*?\./, '').toLowerCase(), port };
}

/** An IPv6 address as a URL writes it (`[2001:db8::1]`), so `2001:DB8:0::1` matches too. */
function ipv6Host(address: string): string {
  return new URL(`http://[${address}]`).hostname;
}

/** True when NO_PROXY exempts `origin` (undici's EnvHttpProxyAgent semantics, and bare IPv6 entries). */
export function noProxyMatches(origin: URL, noProxy: string): boolean {
  if (noProxy.trim() === '*') return true;
  const hostname = origin.host.replace(/:\d*$/, '').toLowerCase();
  const port = Number.parseInt(origin.port, 10) || DEFAULT_PORTS[origin.protocol] || 0;
  for (const entry of noProxy.split(/[,\s]/)) {
    if (!entry) continue;
    const { host, port: entryPort } = noProxyEntry(entry);
    if (entryPort && entryPort !== port) continue;
    if (hostname === host || hostname.endsWith(`.${host}`)) return true;
  }
  return false;
}

function proxyVars(env: NodeJS.ProcessEnv) {
  const http = firstSet(env, ['http_proxy', 'HTTP_PROXY']);
  const https = firstSet(env, ['https_proxy', 'HTTPS_PROXY']) ?? http;
  return { http, https, noProxy: env.no_proxy ?? env.NO_PROXY ?? '' };
}

/** The proxy variable that applies to `origin`, if any: never one for a loopback origin. */
export function proxyFor(origin: URL, env: NodeJS.ProcessEnv = currentIo().env): { name: string; value: string } | undefined {
  if (isLoopbackHost(origin.hostname)) return undefined;
  const vars = proxyVars(env);
  const chosen = origin.protocol === 'https:' ? vars.https : vars.http;
  if (!chosen || noProxyMatches(origin, vars.noProxy)) return undefined;
  return chosen;
}

/** A proxy URL fit for a message: no user name or password. */
function describeProxy(value: string, name: string): string {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host} (${name})`;
  } catch {
    return `the proxy in ${name}`;
  }
}

/**
 * The dispatcher for `origin`: a Pool, or the proxy agent when a proxy applies. `timeoutMs` (--timeout)
 * also bounds undici's wait for the proxy's answer to CONNECT: the client stops waiting at --timeout
 * anyway (api/body.ts), but the connection would stay taken for 300 s, and a watch whose proxy came
 * back would find every connection still stuck.
 */
export function createRoute(origin: URL, env: NodeJS.ProcessEnv = currentIo().env, timeoutMs = PROXY_ANSWER_MS): Route {
  const limits = { connections: MAX_CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS };
  const proxy = proxyFor(origin, env);
  if (!proxy) return { dispatcher: new Pool(origin.origin, limits) };
  const vars = proxyVars(env);
  let dispatcher: Dispatcher;
  try {
    const EnvHttpProxyAgent = envHttpProxyAgent();
    // proxyFor decided already; an empty NO_PROXY keeps undici from deciding again by its own parsing.
    const headersTimeout = Math.max(1, Math.min(timeoutMs, PROXY_ANSWER_MS, MAX_TIMER_MS));
    const clientFactory = (url: URL, opts: object) => new Pool(url, { ...opts, headersTimeout });
    dispatcher = new EnvHttpProxyAgent({
      ...limits,
      httpProxy: vars.http?.value,
      httpsProxy: vars.https?.value,
      noProxy: '',
      clientFactory,
    });
  } catch {
    // The value may carry a proxy password: name the variable only.
    throw new UsageError(`${proxy.name} is not a proxy URL (example: http://proxy.example.com:3128)`);
  }
  return { dispatcher, proxy: describeProxy(proxy.value, proxy.name) };
}
