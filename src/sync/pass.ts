/**
 * One sync pass (PRODUCT.md §4): list campaigns, route each by type to its endpoint, and page every
 * stream from its checkpoint, `concurrency` streams at a time over one request budget.
 */
import type { ApiClient, RequestCounter } from '../api/client.js';
import type { Campaign } from '../api/envelopes.js';
import { toInt64 } from '../core/int64.js';
import type { ReportType } from '../core/types.js';
import { type Endpoint, type StreamId, streamId } from '../core/types.js';
import {
  AbortedError,
  ApiError,
  AuthError,
  CampaignSyncError,
  DataError,
  describeRequest,
  ExitCode,
  isAbort,
  NetworkError,
  UsageError,
} from '../errors.js';
import type { Sink } from '../store/sink.js';
import type { SyncState } from '../store/state.js';
import { checkPage, show } from './records.js';

export interface PassOptions {
  /** Campaign ids or names; empty for all. */
  campaigns: string[];
  type?: Endpoint | undefined;
  reportType: ReportType;
  pageSize: number;
  concurrency: number;
  since?: string | undefined;
  until?: string | undefined;
  full: boolean;
}

export interface PassDeps {
  client: ApiClient;
  sink: Sink;
  state: SyncState;
  signal?: AbortSignal | undefined;
  /** Called whenever a page is committed, for a live count. */
  onProgress?: (p: Progress) => void;
  warn?: (text: string) => void;
}

export interface Progress {
  streamsDone: number;
  streams: number;
  records: number;
  requests: number;
}

export type StreamStatus = 'ok' | 'failed' | 'interrupted';

export interface StreamResult {
  id: StreamId;
  campaignName: string;
  status: StreamStatus;
  /** Records read and written in this pass. */
  records: number;
  inserted: number;
  updated: number;
  pages: number;
  requests: number;
  bytes: number;
  /** The checkpoint after the pass. */
  cursor: bigint | undefined;
  error?: string | undefined;
  /** Set when the stream failed because the service was unreachable or failing (not bad data or 404). */
  unavailable?: boolean;
  durationMs: number;
}

export interface SkippedCampaign {
  id: string;
  name: string;
  type: string;
}

export interface PassResult {
  streams: StreamResult[];
  skipped: SkippedCampaign[];
  requests: number;
  records: number;
  bytes: number;
  durationMs: number;
  interrupted: boolean;
  exitCode: number;
}

/**
 * undici puts a dispatched request on the socket on a later turn of the event loop, so a request
 * sent right before a synchronous SQLite commit would only leave after it. One turn lets it go.
 */
function letRequestOut(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const ROUTES: Record<string, Endpoint> = { SESSION_COMPLETION: 'session', ROLE_SUBMISSION: 'role' };

/** Picks the campaigns the options ask for; an unknown id or name is a usage error. */
export function selectCampaigns(all: Campaign[], selectors: string[]): Campaign[] {
  if (selectors.length === 0) return all;
  const chosen = new Map<string, Campaign>();
  for (const sel of selectors) {
    const hits = all.filter((c) => c.id === sel || c.name === sel);
    if (hits.length === 0) {
      throw new UsageError(`--campaign: no accessible campaign has the id or name "${sel}" (see \`campaign-sync campaigns\`)`);
    }
    if (hits.length > 1) throw new UsageError(`--campaign: "${sel}" names ${hits.length} campaigns; use the id`);
    for (const c of hits) chosen.set(c.id, c);
  }
  return [...chosen.values()];
}

interface PlannedStream {
  id: StreamId;
  campaignName: string;
}

/** Routes campaigns to streams; campaigns of another type are returned as skipped. */
export function planStreams(campaigns: Campaign[], opts: Pick<PassOptions, 'type' | 'reportType'>) {
  const streams: PlannedStream[] = [];
  const skipped: SkippedCampaign[] = [];
  const seen = new Set<string>();
  for (const c of campaigns) {
    // A campaign listed twice must not become two workers on one stream.
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    const endpoint = ROUTES[c.type ?? ''];
    const name = c.name ?? c.display_name ?? c.id;
    if (!endpoint) {
      skipped.push({ id: c.id, name, type: String(c.type ?? 'none') });
      continue;
    }
    if (opts.type && opts.type !== endpoint) continue;
    streams.push({ id: streamId(c.id, endpoint, endpoint === 'role' ? opts.reportType : null), campaignName: name });
  }
  return { streams, skipped };
}

/** The cursor for the next request: the envelope's, else the last record's order_index. */
function nextCursor(page: Record<string, unknown>, lastOrderIndex: bigint | undefined, where: string): bigint | undefined {
  for (const field of ['last_record_index', 'last_record_id']) {
    const value = page[field];
    if (value === undefined || value === null) continue;
    const cursor = toInt64(value);
    if (cursor === undefined) throw new DataError(`${where}: ${field}: ${show(value)} is not a non-negative int64`);
    return cursor;
  }
  return lastOrderIndex;
}

async function syncStream(planned: PlannedStream, deps: PassDeps, opts: PassOptions, totals: Progress): Promise<StreamResult> {
  const { id } = planned;
  const started = Date.now();
  const counter: RequestCounter = { requests: 0, bytes: 0 };
  const backfill = opts.since !== undefined || opts.until !== undefined;
  deps.sink.openStream(id);
  const stored = deps.state.cursor(id);
  let cursor = opts.full || backfill ? undefined : stored;
  // Where this stream's checkpoint stands in the database: every move is a compare-and-set from it.
  let committed = stored;
  const result: StreamResult = {
    id,
    campaignName: planned.campaignName,
    status: 'ok',
    records: 0,
    inserted: 0,
    updated: 0,
    pages: 0,
    requests: 0,
    bytes: 0,
    cursor: stored,
    durationMs: 0,
  };
  const path = `/v1/campaigns/${id.endpoint}/results`;

  const fetchPage = (after: bigint | undefined) => {
    const request = deps.client.resultsPage(
      {
        endpoint: id.endpoint,
        campaignId: id.campaignId,
        limit: opts.pageSize,
        reportType: id.endpoint === 'role' ? opts.reportType : undefined,
        startingAfter: after,
        startDate: opts.since,
        endDate: opts.until,
      },
      counter,
    );
    // Awaited later (or dropped if the stream stops first): never an unhandled rejection.
    request.catch(() => {});
    return request;
  };

  try {
    if (deps.signal?.aborted) throw new AbortedError();
    let pending = fetchPage(cursor);
    for (;;) {
      const { page } = await pending;
      result.pages++;
      const where = `${describeRequest({ method: 'GET', path, campaignId: id.campaignId })}, page ${result.pages}`;
      const checked = checkPage(page.data, { where, campaignId: id.campaignId, after: cursor });
      const last = checked.at(-1)?.orderIndex;
      const next = nextCursor(page, last, where);
      if (page.has_more && checked.length === 0) {
        throw new DataError(`${where}: has_more is true but the page is empty; stopped to avoid an endless loop`);
      }
      if (page.has_more && (next === undefined || (cursor !== undefined && next <= cursor) || (last !== undefined && next < last))) {
        throw new DataError(
          `${where}: the cursor did not advance (sent ${cursor ?? 'none'}, page ends at ${last ?? 'none'}, next ${next ?? 'none'}); stopped to avoid an endless loop`,
        );
      }
      // The next page is on its way while this one is stored: the network overlaps the disk.
      if (page.has_more && !deps.signal?.aborted) {
        pending = fetchPage(next);
        await letRequestOut();
      }
      // Backfills leave checkpoints alone; an empty last page leaves it where it was.
      const checkpoint = backfill || last === undefined ? undefined : last;
      const counts = deps.sink.commitPage(id, checked, checkpoint === undefined ? undefined : { from: committed, to: checkpoint });
      if (checkpoint !== undefined) result.cursor = committed = checkpoint;
      result.records += checked.length;
      result.inserted += counts.inserted;
      result.updated += counts.updated;
      totals.records += checked.length;
      totals.requests = deps.client.requests;
      deps.onProgress?.({ ...totals });
      if (!page.has_more) break;
      if (deps.signal?.aborted) throw new AbortedError();
      cursor = next;
    }
    deps.sink.endStream(id, undefined, new Date().toISOString());
  } catch (err) {
    if (err instanceof AuthError) throw err;
    if (isAbort(err) && deps.signal?.aborted) {
      result.status = 'interrupted';
    } else {
      if (!(err instanceof ApiError || err instanceof DataError)) throw err;
      result.status = 'failed';
      result.error = err.message;
      result.unavailable = err instanceof NetworkError || (err instanceof ApiError && (err.status === 429 || (err.status ?? 0) >= 500));
      // A storage failure here (the sink stopped) is thrown on: fatal for the whole pass.
      deps.sink.endStream(id, err.message, new Date().toISOString());
    }
  } finally {
    result.requests = counter.requests;
    result.bytes = counter.bytes;
    result.durationMs = Date.now() - started;
  }
  return result;
}

/** Runs one pass; 401 throws AuthError, a failed campaign list throws ApiError (exit 5). */
export async function runPass(deps: PassDeps, opts: PassOptions): Promise<PassResult> {
  const started = Date.now();
  const requestsBefore = deps.client.requests;
  let campaigns: Campaign[];
  try {
    campaigns = await deps.client.listCampaigns();
  } catch (err) {
    // Without the campaign list no stream can sync: exit 5 for a failing service, 4 for bad data.
    if (err instanceof ApiError && !(err instanceof AuthError)) {
      const failing = err instanceof NetworkError || err.status === 429 || (err.status ?? 0) >= 500;
      throw new CampaignSyncError(`nothing synced: ${err.message}`, failing ? ExitCode.unavailable : ExitCode.partial);
    }
    throw err;
  }
  deps.sink.campaigns(campaigns as Array<Record<string, unknown>>);
  const { streams: planned, skipped } = planStreams(selectCampaigns(campaigns, opts.campaigns), opts);
  for (const s of skipped)
    deps.warn?.(`campaign ${s.name} (${s.id}) has type ${s.type}, which campaign-sync does not know how to read: skipped`);

  // A 401, or an error that is not the stream's own (a full disk, a bug), stops every stream; the
  // workers never reject, so none is left writing after the pass has returned.
  const stop = new AbortController();
  const forward = () => stop.abort();
  if (deps.signal?.aborted) stop.abort();
  deps.signal?.addEventListener('abort', forward, { once: true });
  const signal = stop.signal;
  const totals: Progress = { streamsDone: 0, streams: planned.length, records: 0, requests: deps.client.requests };
  const results: StreamResult[] = new Array(planned.length);
  let fatal: unknown;
  let next = 0;
  const worker = async () => {
    while (next < planned.length && fatal === undefined) {
      const index = next++;
      try {
        results[index] = await syncStream(planned[index] as PlannedStream, { ...deps, signal }, opts, totals);
      } catch (err) {
        fatal ??= err;
        stop.abort();
        return;
      }
      totals.streamsDone++;
      deps.onProgress?.({ ...totals, requests: deps.client.requests });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, planned.length)) }, worker));
  deps.signal?.removeEventListener('abort', forward);
  // Whatever happened, what was written is committed before the pass reports; unless a write or
  // commit failed, in which case nothing more was written and that failure is the pass's (exit 74).
  let flushError: unknown;
  try {
    deps.sink.flush();
  } catch (err) {
    flushError = err;
  }
  if (deps.sink.failure) throw deps.sink.failure;
  if (fatal !== undefined) throw fatal;
  if (flushError !== undefined) throw flushError;

  const streams = results.filter(Boolean);
  const failed = streams.filter((s) => s.status === 'failed');
  const interrupted = deps.signal?.aborted === true;
  let exitCode: number = ExitCode.ok;
  if (!interrupted && failed.length > 0) {
    const allFailed = failed.length === streams.length;
    exitCode = allFailed && failed.every((s) => s.unavailable) ? ExitCode.unavailable : ExitCode.partial;
  }
  return {
    streams,
    skipped,
    requests: deps.client.requests - requestsBefore,
    records: streams.reduce((n, s) => n + s.records, 0),
    bytes: streams.reduce((n, s) => n + s.bytes, 0),
    durationMs: Date.now() - started,
    interrupted,
    exitCode,
  };
}
