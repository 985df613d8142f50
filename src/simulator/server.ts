/**
 * The simulator's HTTP server: the three GET endpoints of spec/service-interface.md §4 over
 * SimData, with the spec's auth, errors (§7) and rate limit (§8), plus optional growth and faults.
 *
 * Over 250 lines because routing, query parsing and the fault injector share one request's state;
 * query parsing is the first to move out (simulator/query.ts) when the documented shapes of issue 12
 * add their own routes.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { toJson } from '../core/json.js';
import type { Rate } from '../core/rate.js';
import { SimChanges } from './changes.js';
import { type SimCampaign, SimData } from './data.js';
import { chooseFault, type FaultKind, type FaultPlan } from './faults.js';
import { hash32, prng, seedNumber } from './random.js';
import { SlidingWindow } from './window.js';

/** Deviations from the spec that published samples show, for rehearsing a client against them. */
export interface Quirks {
  /** order_index as a decimal string, as some of the service's samples show. */
  stringOrderIndex?: boolean;
  /** The envelope names the cursor `last_record_id` (one guide's name) instead of `last_record_index`. */
  lastRecordId?: boolean;
  /** The envelope carries no cursor field at all: the client must use the last record's order_index. */
  noCursorField?: boolean;
}

export interface SimulatorOptions {
  port?: number;
  host?: string;
  seed?: string | number;
  campaigns?: number;
  records?: number;
  apiKey?: string;
  /** Per-key budget; undefined for none. */
  rateLimit?: Rate | undefined;
  /** New records per campaign per window. */
  growth?: Rate | undefined;
  faults?: FaultPlan;
  /** Delay of a `slow` fault. */
  slowMs?: number;
  /** Retry-After, in whole seconds, of a `429` or `503` fault (default 1; tests set 0 to skip the wait). */
  faultRetryAfterS?: number;
  orderIndexStart?: bigint;
  unknownTypeCampaigns?: number;
  quirks?: Quirks;
  /** Keep rendered page bodies in memory (benchmarks: the server should not be what is measured). */
  cachePages?: boolean;
  /** Clock, for tests. */
  now?: () => number;
}

export interface SimulatorStats {
  requests: number;
  byStatus: Record<number, number>;
  faults: Record<string, number>;
  bodyBytes: number;
  /** When the first and the latest request arrived (ms since the epoch), for throughput figures. */
  firstRequestAt: number;
  lastRequestAt: number;
}

export interface RunningSimulator {
  /** Base URL without /v1, e.g. http://127.0.0.1:43127 */
  url: string;
  port: number;
  apiKey: string;
  data: SimData;
  /** Re-scores, late arrivals and deletions applied to the data (simulator/changes.ts). */
  changes: SimChanges;
  stats: SimulatorStats;
  close(): Promise<void>;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const INT64 = /^-?\d{1,19}$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

function errorBody(status: number, message: string): string {
  return JSON.stringify({ error: { message, status_code: status, request_id: randomUUID() } });
}

function parseQuery(url: URL, allowed: { reportType: boolean }) {
  const q = url.searchParams;
  const one = (name: string): string | undefined => {
    const all = q.getAll(name);
    if (all.length > 1) throw new HttpError(400, `${name} must be given once`);
    return all[0];
  };
  const limitText = one('limit');
  let limit = 10;
  if (limitText !== undefined) {
    if (!/^\d+$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > 100) {
      throw new HttpError(400, 'limit must be an integer from 1 to 100');
    }
    limit = Number(limitText);
  }
  const sort = one('sort') ?? 'desc';
  if (sort !== 'asc' && sort !== 'desc') throw new HttpError(400, 'sort must be asc or desc');
  const startDate = one('start_date');
  const endDate = one('end_date');
  for (const [name, v] of [
    ['start_date', startDate],
    ['end_date', endDate],
  ] as const) {
    if (v !== undefined && (!DATE.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)))) {
      throw new HttpError(400, `${name} must be a date in the form YYYY-MM-DD`);
    }
  }
  const afterText = one('starting_after');
  let startingAfter: bigint | undefined;
  if (afterText !== undefined) {
    const v = INT64.test(afterText) ? BigInt(afterText) : undefined;
    if (v === undefined || v < INT64_MIN || v > INT64_MAX) throw new HttpError(400, 'starting_after must be an int64 order_index');
    startingAfter = v;
  }
  let reportType: 'DETAILED' | 'OVERALL' = 'OVERALL';
  if (allowed.reportType) {
    const r = one('report_type') ?? 'OVERALL';
    if (r !== 'DETAILED' && r !== 'OVERALL') throw new HttpError(400, 'report_type must be DETAILED or OVERALL');
    reportType = r;
  }
  const campaignId = one('campaign_id');
  if (campaignId === undefined || campaignId === '') throw new HttpError(400, 'campaign_id is required');
  return { limit, sort, startDate, endDate, startingAfter, reportType, campaignId };
}

/** Starts the simulator; port 0 (the default) picks a free port. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const now = options.now ?? Date.now;
  const seed = seedNumber(options.seed ?? 1);
  const apiKey = options.apiKey ?? 'demo-key';
  const growthPerMs = options.growth ? options.growth.count / options.growth.windowMs : 0;
  const data = new SimData(
    {
      seed,
      campaigns: options.campaigns ?? 6,
      records: options.records ?? 250,
      orderIndexStart: options.orderIndexStart ?? 1000n,
      unknownTypeCampaigns: options.unknownTypeCampaigns ?? 0,
    },
    now(),
    growthPerMs,
  );
  const changes = new SimChanges(data);
  const limiter = options.rateLimit ? new SlidingWindow(options.rateLimit.count, options.rateLimit.windowMs) : undefined;
  const faults = options.faults ?? {};
  const faultDraw = prng(hash32(seed, 0xfa));
  const quirks = options.quirks ?? {};
  const cache = options.cachePages ? new Map<string, string>() : undefined;
  const stats: SimulatorStats = { requests: 0, byStatus: {}, faults: {}, bodyBytes: 0, firstRequestAt: 0, lastRequestAt: 0 };
  const sockets = new Set<Socket>();

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    stats.bodyBytes += Buffer.byteLength(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
    res.end(body);
  };

  const campaignsBody = (): string =>
    JSON.stringify({
      data: data.campaigns.map((c) => ({ id: c.id, name: c.name, display_name: c.display_name, type: c.type, created_at: c.created_at })),
    });

  const resultsBody = (url: URL, endpoint: 'session' | 'role'): string => {
    const q = parseQuery(url, { reportType: endpoint === 'role' });
    const campaign: SimCampaign | undefined = data.byId.get(q.campaignId);
    const wanted = endpoint === 'session' ? 'SESSION_COMPLETION' : 'ROLE_SUBMISSION';
    if (!campaign || campaign.type !== wanted) throw new HttpError(404, 'Not found');
    const count = data.count(now());
    // The index range allowed by the date filters (inclusive UTC days of created_at).
    let lo = q.startDate ? data.firstCreatedAtOrAfter(Date.parse(`${q.startDate}T00:00:00Z`), count) : 0;
    let hi = q.endDate ? data.firstCreatedAtOrAfter(Date.parse(`${q.endDate}T00:00:00Z`) + 86_400_000, count) : count;
    const indexes: number[] = [];
    let hasMore: boolean;
    let records: Array<Record<string, unknown>> = [];
    if (changes.any) {
      const page = changes.page(campaign, endpoint, q, lo, hi);
      records = page.records;
      hasMore = page.hasMore;
    } else if (q.sort === 'asc') {
      if (q.startingAfter !== undefined) lo = Math.max(lo, data.firstAfter(campaign, q.startingAfter));
      for (let i = lo; i < hi && indexes.length < q.limit; i++) indexes.push(i);
      hasMore = lo + indexes.length < hi;
    } else {
      if (q.startingAfter !== undefined) hi = Math.min(hi, data.firstAfter(campaign, q.startingAfter - 1n));
      for (let i = hi - 1; i >= lo && indexes.length < q.limit; i--) indexes.push(i);
      hasMore = hi - indexes.length > lo;
    }
    if (!changes.any)
      records = indexes.map((i) => (endpoint === 'session' ? data.sessionResult(campaign, i) : data.roleResult(campaign, i, q.reportType)));
    if (quirks.stringOrderIndex) for (const r of records) r.order_index = String(r.order_index);
    const last = records.length > 0 ? (records[records.length - 1] as Record<string, unknown>).order_index : null;
    const envelope: Record<string, unknown> = { data: records, has_more: hasMore };
    if (quirks.lastRecordId) envelope.last_record_id = last;
    else if (!quirks.noCursorField) envelope.last_record_index = last;
    return toJson(envelope);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    stats.requests++;
    stats.lastRequestAt = performance.now() + performance.timeOrigin;
    if (stats.requests === 1) stats.firstRequestAt = stats.lastRequestAt;
    const url = new URL(req.url ?? '/', 'http://simulator');
    if (req.method !== 'GET') return send(res, 405, errorBody(405, 'Method not allowed'), { allow: 'GET' });
    if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, 401, errorBody(401, 'Unauthorized'));
    if (limiter) {
      const wait = limiter.waitMs(now());
      if (wait > 0) {
        return send(res, 429, errorBody(429, 'Too many requests'), { 'retry-after': String(Math.ceil(wait / 1000)) });
      }
      limiter.record(now());
    }
    const fault: FaultKind | undefined = chooseFault(faults, faultDraw());
    if (fault) stats.faults[fault] = (stats.faults[fault] ?? 0) + 1;
    if (fault === '500') return send(res, 500, errorBody(500, 'Internal server error'));
    const faultRetryAfter = String(options.faultRetryAfterS ?? 1);
    if (fault === '503') return send(res, 503, errorBody(503, 'Service unavailable'), { 'retry-after': faultRetryAfter });
    if (fault === '429') return send(res, 429, errorBody(429, 'Too many requests'), { 'retry-after': faultRetryAfter });
    if (fault === 'reset') return req.socket.destroy();

    let status = 200;
    let body: string;
    try {
      const key = url.pathname + url.search;
      const cached = cache?.get(key);
      if (cached !== undefined) body = cached;
      else {
        if (url.pathname === '/v1/campaigns') body = campaignsBody();
        else if (url.pathname === '/v1/campaigns/session/results') body = resultsBody(url, 'session');
        else if (url.pathname === '/v1/campaigns/role/results') body = resultsBody(url, 'role');
        else throw new HttpError(404, 'Not found');
        cache?.set(key, body);
      }
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      status = err.status;
      body = errorBody(err.status, err.message);
    }
    if (fault === 'truncate') {
      // Promise the whole body, send half, hang up: the client sees a truncated response.
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.write(body.slice(0, Math.floor(body.length / 2)));
      setTimeout(() => res.socket?.destroy(), 10);
      return;
    }
    if (fault === 'slow') {
      setTimeout(() => send(res, status, body), options.slowMs ?? 1500);
      return;
    }
    send(res, status, body);
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      send(res, 500, errorBody(500, 'Internal server error'));
      console.error(err);
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    apiKey,
    data,
    changes,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
