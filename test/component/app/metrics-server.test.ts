/**
 * watch's metrics endpoint under a flood of half-sent requests: any local user can
 * reach it, and with Node's defaults ~20,000 held connections used up watch's file descriptors (its
 * passes then failed with EMFILE) or left /healthz unanswered for a minute at a time. Connections are
 * capped and slow requests cut; the limits are shrunk here so the test takes a second.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { METRICS_LIMITS, type RunningMetricsServer, startMetricsServer } from '../../../src/app/metrics-server.js';

const endpoints = {
  metrics: async () => ({ body: 'campaign_sync_up 1\n', contentType: 'text/plain' }),
  health: () => ({ body: { status: 'ok' }, ok: true }),
};

let server: RunningMetricsServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

/** Opens a connection that writes `data` and never finishes; resolves its close time (ms after `t0`). */
function hold(port: number, data: string, t0: number): Promise<number> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    sockets.push(s);
    s.on('connect', () => data && s.write(data));
    s.on('error', () => {});
    s.on('data', () => {});
    s.on('close', () => resolve(performance.now() - t0));
  });
}

describe('the metrics endpoint', () => {
  it('caps connections and cuts slow requests: a flood never holds more than the cap, and /healthz answers once it is cut', async () => {
    const limits = { maxConnections: 8, headersTimeoutMs: 400, requestTimeoutMs: 800, keepAliveTimeoutMs: 400, checkEveryMs: 100 };
    server = await startMetricsServer({ host: '127.0.0.1', port: 0 }, endpoints, limits);
    const port = Number(new URL(server.url).port);
    const t0 = performance.now();
    const closes = Array.from({ length: 40 }, (_, i) => hold(port, i % 2 ? 'GET /metrics HTTP/1.1\r\n' : '', t0));
    const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('connections still held after 5 s')), 5_000).unref());
    const times = (await Promise.race([Promise.all(closes), late])).sort((a, b) => a - b);
    // Past the cap, closed as they arrive; the held ones by the timeouts (headers, or no bytes at all), not after a minute.
    expect(times.filter((t) => t < 300).length).toBeGreaterThanOrEqual(40 - limits.maxConnections);
    expect(times.at(-1)).toBeLessThan(3_000);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const metrics = await fetch(`${server.url}/metrics`);
    expect(await metrics.text()).toBe('campaign_sync_up 1\n');
  });

  it("watch's limits: a few dozen connections, seconds for a request", () => {
    expect(METRICS_LIMITS.maxConnections).toBeGreaterThanOrEqual(16);
    expect(METRICS_LIMITS.maxConnections).toBeLessThanOrEqual(128);
    expect(METRICS_LIMITS.headersTimeoutMs).toBeLessThanOrEqual(10_000);
    expect(METRICS_LIMITS.requestTimeoutMs).toBeLessThanOrEqual(15_000);
    expect(METRICS_LIMITS.checkEveryMs).toBeLessThanOrEqual(2_000);
  });
});
