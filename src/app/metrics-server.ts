/**
 * The HTTP endpoint of `watch --metrics-listen`: GET /metrics (Prometheus text) and GET /healthz (the
 * health rule of `status --check`, sync/health.ts, as JSON: 200 when every stream is healthy or
 * some are, 503 when none is). Anything else is 404. It reads, never writes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ListenAddress } from '../config/listen.js';
import { UsageError } from '../errors.js';

export interface MetricsEndpoints {
  /** The Prometheus text and its content type. */
  metrics(): Promise<{ body: string; contentType: string }>;
  /** The health document and whether it is healthy enough for 200. */
  health(): { body: unknown; ok: boolean };
}

export interface RunningMetricsServer {
  /** `http://127.0.0.1:9464`, with the port actually bound (port 0 picks one). */
  url: string;
  close(): Promise<void>;
}

/**
 * What one client may hold of the endpoint. It answers anyone who can reach it (every local user, by
 * default), in the process that syncs: with Node's defaults (no cap, 60 s for a request's headers,
 * checked every 30 s) a few thousand half-sent requests used up watch's file descriptors, and its
 * passes failed with EMFILE as if the service were down. A scraper and a probe need a few connections
 * and answer within a second; a flood now costs at most the scrapes while it lasts, never the sync.
 */
export const METRICS_LIMITS = {
  /** Connections at once; more are closed as they arrive. */
  maxConnections: 64,
  /** A request's headers must arrive within this (ms)... */
  headersTimeoutMs: 5_000,
  /** ...and the whole request within this. */
  requestTimeoutMs: 10_000,
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
  /** How often the two timeouts above are checked. */
  checkEveryMs: 1_000,
};

export async function startMetricsServer(
  at: ListenAddress,
  endpoints: MetricsEndpoints,
  limits = METRICS_LIMITS,
): Promise<RunningMetricsServer> {
  const options = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: limits.checkEveryMs,
  };
  const server: Server = createServer(options, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      endpoints.metrics().then(
        ({ body, contentType }) => res.writeHead(200, { 'content-type': contentType }).end(body),
        () => res.writeHead(500).end(),
      );
      return;
    }
    if (path === '/healthz') {
      let answer: ReturnType<MetricsEndpoints['health']>;
      try {
        answer = endpoints.health();
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`);
        return;
      }
      res.writeHead(answer.ok ? 200 : 503, { 'content-type': 'application/json' }).end(`${JSON.stringify(answer.body)}\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
  });
  server.maxConnections = limits.maxConnections;
  // A socket that sends nothing at all (not even half a request line) is closed too.
  server.setTimeout(limits.requestTimeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenFailure(err, at)));
    server.listen(at.port, at.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${host}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function listenFailure(err: unknown, at: ListenAddress): unknown {
  const code = (err as { code?: string }).code;
  // The address is the user's choice: a usage error (exit 2) that names it.
  if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return new UsageError(`--metrics-listen: cannot listen on ${at.host}:${at.port} (${code})`);
  return err;
}
