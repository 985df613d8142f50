/**
 * The simulator's HTTP server: the three GET endpoints of spec/service-interface.md §4 over
 * SimData, with the spec's auth, errors (§7) and rate limit (§8), plus optional growth and faults.
 *
 * Query parsing is in query.ts, the documented shapes (quirks.ts) in shapes.ts. Over 250 lines
 * because routing, paging and the fault injector share one request's state.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { toJson } from '../core/json.js';
import type { Rate } from '../core/rate.js';
import { SimChanges } from './changes.js';
import { control, isControl } from './control.js';
import { checkOrderIndexRoom, type SimCampaign, SimData } from './data.js';
import { acceptsGzip, gzipBody } from './encoding.js';
import { chooseFault, type FaultKind, type FaultPlan } from './faults.js';
import { type MalformedPlan, malform, malformedKind, wireText } from './malformed.js';
import { errorBody, HttpError, parseCampaignQuery, parseQuery } from './query.js';
import type { Quirks } from './quirks.js';
import { hash32, prng, seedNumber } from './random.js';
import { shapeRecord } from './shapes.js';
import { checkRateLimit, SlidingWindow } from './window.js';

export type { Quirks };

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
  /** Only the first N campaigns grow (`simulate --growth-campaigns`): results arrive on some campaigns only. */
  growthCampaigns?: number | undefined;
  /** Changes to served results per window: re-scores, late arrivals, deletions (simulator/changes.ts). */
  churn?: Rate | undefined;
  faults?: FaultPlan;
  /** Delay of a `slow` fault. */
  slowMs?: number;
  /** Retry-After, in whole seconds, of a `429` or `503` fault (default 1; tests set 0 to skip the wait). */
  faultRetryAfterS?: number;
  orderIndexStart?: bigint;
  unknownTypeCampaigns?: number;
  quirks?: Quirks;
  /** Campaigns per page of a paged campaign list (the `campaignsPaged` quirk) when no `limit` is sent. */
  campaignPageSize?: number;
  /** Keep rendered page bodies in memory (benchmarks: the server should not be what is measured). */
  cachePages?: boolean;
  /** Serve https with this certificate and key (PEM), e.g. to rehearse a private CA with NODE_EXTRA_CA_CERTS. */
  tls?: { cert: string | Buffer; key: string | Buffer } | undefined;
  /** Serve every Nth record malformed (simulator/malformed.ts), until `malformedForMs` has passed or `malformed.fix()`. */
  malformed?: MalformedPlan | undefined;
  malformedForMs?: number | undefined;
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
  /** Answers sent gzip-compressed (the request's Accept-Encoding asked for gzip). */
  gzipped: number;
  /** Requests by User-Agent header ('' when none was sent). */
  userAgents: Record<string, number>;
  /**
   * Results requests that arrived while another request of the same stream (endpoint, campaign and
   * report type) was still being answered. One worker asks for a stream's pages one at a time, so
   * anything above 0 means two workers synced one stream at once. Seen only when answers take time
   * (the `slow` fault): an instant answer ends before the next request can arrive.
   */
  streamOverlaps: number;
  /** The streams of those requests (bounded to 100). */
  overlappedStreams: string[];
  /** The latest answers (bounded to 1,000, oldest first): each one's `x-request-id`, status, request path with its query, and when its request arrived (ms since the epoch). */
  recentAnswers: Array<{ requestId: string; status: number; path: string; at: number }>;
}

export interface RunningSimulator {
  /** Base URL without /v1, e.g. http://127.0.0.1:43127 */
  url: string;
  port: number;
  apiKey: string;
  data: SimData;
  /** The quirks it serves with (shapes.ts shapes a record the same way). */
  quirks: Quirks;
  /** Re-scores, late arrivals and deletions applied to the data (simulator/changes.ts). */
  changes: SimChanges;
  stats: SimulatorStats;
  /** The malformed records of `--malformed`: `fix()` serves them whole from now on. */
  malformed: { fix(): void; readonly fixed: boolean };
  close(): Promise<void>;
}

/** Starts the simulator; port 0 (the default) picks a free port. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const now = options.now ?? Date.now;
  const seed = seedNumber(options.seed ?? 1);
  const apiKey = options.apiKey ?? 'demo-key';
  const growthPerMs = options.growth ? options.growth.count / options.growth.windowMs : 0;
  const records = options.records ?? 250;
  const orderIndexStart = options.orderIndexStart ?? 1000n;
  checkOrderIndexRoom(orderIndexStart, records, growthPerMs);
  if (options.rateLimit) checkRateLimit(options.rateLimit);
  const data = new SimData(
    {
      seed,
      campaigns: options.campaigns ?? 6,
      records,
      orderIndexStart,
      unknownTypeCampaigns: options.unknownTypeCampaigns ?? 0,
      unorderedTimes: options.quirks?.unorderedTimes === true,
      growthCampaigns: options.growthCampaigns,
    },
    now(),
    growthPerMs,
  );
  const changes = new SimChanges(data);
  let churnTimer: NodeJS.Timeout | undefined;
  if (options.churn) {
    const churnDraw = prng(hash32(seed, 0xc4));
    churnTimer = setInterval(
      () => changes.churn(now(), (c) => data.count(now(), c), churnDraw),
      options.churn.windowMs / options.churn.count,
    );
    churnTimer.unref();
  }
  const limiter = options.rateLimit ? new SlidingWindow(options.rateLimit.count, options.rateLimit.windowMs) : undefined;
  const faults = options.faults ?? {};
  const faultDraw = prng(hash32(seed, 0xfa));
  const quirks = options.quirks ?? {};
  const cache = options.cachePages ? new Map<string, string>() : undefined;
  const stats: SimulatorStats = {
    requests: 0,
    byStatus: {},
    faults: {},
    bodyBytes: 0,
    firstRequestAt: 0,
    lastRequestAt: 0,
    gzipped: 0,
    userAgents: {},
    streamOverlaps: 0,
    overlappedStreams: [],
    recentAnswers: [],
  };
  // When each request being answered arrived (recentAnswers).
  const arrivals = new WeakMap<ServerResponse, number>();
  // Results requests being answered, by stream.
  const inFlight = new Map<string, number>();
  const track = (url: URL, res: ServerResponse) => {
    if (!url.pathname.endsWith('/results')) return;
    const p = url.searchParams;
    const key = `${url.pathname} ${p.get('campaign_id') ?? ''} ${p.get('report_type') ?? ''}`;
    const n = inFlight.get(key) ?? 0;
    if (n > 0) {
      stats.streamOverlaps++;
      if (stats.overlappedStreams.length < 100 && !stats.overlappedStreams.includes(key)) stats.overlappedStreams.push(key);
    }
    inFlight.set(key, n + 1);
    res.once('close', () => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left === 0) inFlight.delete(key);
      else inFlight.set(key, left);
    });
  };
  const sockets = new Set<Socket>();
  const startedAt = now();
  let fixed = options.malformed === undefined;
  const malformedNow = (): MalformedPlan | undefined => {
    if (!fixed && options.malformedForMs !== undefined && now() - startedAt >= options.malformedForMs) fixed = true;
    return fixed ? undefined : options.malformed;
  };

  // Cached pages keep their compressed form too (same string, same Buffer): the bench measures the client, not gzip here.
  const gzipCache = cache ? new Map<string, Buffer>() : undefined;
  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    // Bounded: a client sending a new User-Agent every time must not grow the stats without end.
    let agent = res.req?.headers['user-agent'] ?? '';
    if (stats.userAgents[agent] === undefined && Object.keys(stats.userAgents).length >= 100) agent = '(other)';
    stats.userAgents[agent] = (stats.userAgents[agent] ?? 0) + 1;
    // Every answer names itself, as the error body's request_id does (§7); a quarantined record keeps it.
    const requestId = randomUUID();
    if (stats.recentAnswers.length >= 1000) stats.recentAnswers.shift();
    stats.recentAnswers.push({
      requestId,
      status,
      path: res.req?.url ?? '',
      at: arrivals.get(res) ?? performance.now() + performance.timeOrigin,
    });
    const type = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId };
    if (!acceptsGzip(res.req?.headers['accept-encoding'])) {
      stats.bodyBytes += Buffer.byteLength(body);
      res.writeHead(status, { ...type, 'content-length': Buffer.byteLength(body), ...headers });
      res.end(body);
      return;
    }
    const zipped = gzipBody(body, gzipCache);
    stats.gzipped++;
    stats.bodyBytes += zipped.length;
    res.writeHead(status, { ...type, 'content-encoding': 'gzip', vary: 'accept-encoding', 'content-length': zipped.length, ...headers });
    res.end(zipped);
  };

  const campaignsBody = (url: URL): string => {
    const all = data.campaigns.map((c) => ({
      id: c.id,
      name: c.name,
      display_name: c.display_name,
      type: c.type,
      created_at: c.created_at,
    }));
    if (quirks.campaignsBareArray) return JSON.stringify(all);
    if (!quirks.campaignsPaged) return JSON.stringify({ data: all });
    // Paged by id: `starting_after` names the last campaign already read.
    const q = parseCampaignQuery(url, options.campaignPageSize ?? 4);
    let from = 0;
    if (q.startingAfter !== undefined) {
      from = all.findIndex((c) => c.id === q.startingAfter) + 1;
      if (from === 0) throw new HttpError(400, 'starting_after must be the id of a campaign');
    }
    const page = all.slice(from, from + q.limit);
    const hasMore = from + page.length < all.length;
    return JSON.stringify({ data: page, has_more: hasMore, last_record_id: page.at(-1)?.id ?? null });
  };

  const resultsBody = (url: URL, endpoint: 'session' | 'role'): string => {
    const q = parseQuery(url, { reportType: endpoint === 'role' });
    const campaign: SimCampaign | undefined = data.byId.get(q.campaignId);
    const wanted = endpoint === 'session' ? 'SESSION_COMPLETION' : 'ROLE_SUBMISSION';
    if (!campaign || campaign.type !== wanted) throw new HttpError(404, 'Not found');
    const count = data.count(now(), campaign);
    // The index range allowed by the date filters (inclusive UTC days of created_at).
    const from = q.startDate ? Date.parse(`${q.startDate}T00:00:00Z`) : -Infinity;
    const until = q.endDate ? Date.parse(`${q.endDate}T00:00:00Z`) + 86_400_000 : Infinity;
    // Ordered times: the window is an index range. Unordered: every index is tested against it.
    const ranged = data.timesOrdered || (q.startDate === undefined && q.endDate === undefined);
    let lo = ranged && q.startDate ? data.firstCreatedAtOrAfter(from, count) : 0;
    let hi = ranged && q.endDate ? data.firstCreatedAtOrAfter(until, count) : count;
    const inWindow = (i: number) => {
      if (ranged) return true;
      const t = data.createdAt(i);
      return t >= from && t < until;
    };
    const indexes: number[] = [];
    let hasMore = false;
    let records: Array<Record<string, unknown>> = [];
    if (changes.any) {
      const page = changes.page(campaign, endpoint, q, lo, hi, ranged ? undefined : inWindow);
      records = page.records;
      hasMore = page.hasMore;
    } else if (q.sort === 'asc') {
      if (q.startingAfter !== undefined) lo = Math.max(lo, data.firstAfter(campaign, q.startingAfter));
      for (let i = lo; i < hi; i++) {
        if (!inWindow(i)) continue;
        if (indexes.length === q.limit) {
          hasMore = true;
          break;
        }
        indexes.push(i);
      }
    } else {
      if (q.startingAfter !== undefined) hi = Math.min(hi, data.firstAfter(campaign, q.startingAfter - 1n));
      for (let i = hi - 1; i >= lo; i--) {
        if (!inWindow(i)) continue;
        if (indexes.length === q.limit) {
          hasMore = true;
          break;
        }
        indexes.push(i);
      }
    }
    if (!changes.any)
      records = indexes.map((i) => (endpoint === 'session' ? data.sessionResult(campaign, i) : data.roleResult(campaign, i, q.reportType)));
    records = records.map((r) => shapeRecord(r, endpoint, quirks, data.startedAt));
    const last = records.length > 0 ? (records[records.length - 1] as Record<string, unknown>).order_index : null;
    const plan = changes.any ? undefined : malformedNow();
    if (plan !== undefined) {
      records = records.map((r, k) => {
        const kind = malformedKind(plan, indexes[k] as number);
        return kind === undefined ? r : malform(r, kind);
      });
    }
    // Only a page with malformed records may need a number no JavaScript value is.
    const wire = (text: string) => (plan === undefined ? text : wireText(text));
    if (quirks.bareArray) return wire(toJson(records));
    const envelope: Record<string, unknown> = { data: records, has_more: hasMore };
    if (quirks.lastRecordId) envelope.last_record_id = last;
    else if (!quirks.noCursorField) envelope.last_record_index = last;
    return wire(toJson(envelope));
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    stats.requests++;
    stats.lastRequestAt = performance.now() + performance.timeOrigin;
    if (stats.requests === 1) stats.firstRequestAt = stats.lastRequestAt;
    arrivals.set(res, stats.lastRequestAt);
    const url = new URL(req.url ?? '/', 'http://simulator');
    track(url, res);
    if (isControl(url.pathname)) {
      if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, 401, errorBody(401, 'Unauthorized'));
      try {
        const body = control(req.method, url.pathname, data, changes, now());
        // A page cached before the change would serve the record as it was.
        cache?.clear();
        return send(res, 200, body);
      } catch (err) {
        if (!(err instanceof HttpError)) throw err;
        return send(res, err.status, errorBody(err.status, err.message), err.status === 405 ? { allow: 'POST' } : {});
      }
    }
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
      const key = `${url.pathname}${url.search}${malformedNow() === undefined ? '' : ' malformed'}`;
      const cached = cache?.get(key);
      if (cached !== undefined) body = cached;
      else {
        if (url.pathname === '/v1/campaigns') body = campaignsBody(url);
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

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    try {
      handle(req, res);
    } catch (err) {
      send(res, 500, errorBody(500, 'Internal server error'));
      console.error(err);
    }
  };
  const server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, listener) : createServer(listener);
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
    url: `${options.tls ? 'https' : 'http'}://${host}:${address.port}`,
    port: address.port,
    apiKey,
    data,
    quirks,
    changes,
    stats,
    malformed: {
      fix: () => {
        fixed = true;
      },
      get fixed() {
        return fixed;
      },
    },
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(churnTimer);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
