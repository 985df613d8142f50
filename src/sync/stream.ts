/**
 * One stream's loop (PRODUCT.md §4): page from the checkpoint, check each page, commit its records
 * with the checkpoint move, and ask for the next page while this one is stored. A stream's own
 * failure (the service's answer, bad data) ends it with a result; a 401 or a storage failure is
 * thrown on: fatal for the whole pass.
 */
import type { ApiClient, RequestCounter } from '../api/client.js';
import type { Progress, RunEvents } from '../core/events.js';
import type { ReportType, StreamId } from '../core/types.js';
import { AbortedError, ApiError, AuthError, DataError, describeRequest, type ErrorKind, isAbort } from '../errors.js';
import { resultsPath } from '../spec/paths.js';
import type { Checkpoints } from '../store/checkpoints.js';
import type { Sink } from '../store/sinks/sink.js';
import { nextStep } from './paginate.js';
import type { PlannedStream } from './plan.js';
import { checkPage } from './records.js';

export interface StreamOptions {
  reportType: ReportType;
  pageSize: number;
  since?: string | undefined;
  until?: string | undefined;
  full: boolean;
}

export interface StreamDeps {
  client: ApiClient;
  sink: Sink;
  state: Checkpoints;
  signal?: AbortSignal | undefined;
  /** Pages and warnings are reported here (core/events.ts). */
  events?: RunEvents | undefined;
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
  /** The kind of the error that failed the stream (`unavailable`: the service was unreachable or failing). */
  errorKind?: ErrorKind | undefined;
  durationMs: number;
}

/**
 * undici puts a dispatched request on the socket on a later turn of the event loop, so a request
 * sent right before a synchronous SQLite commit would only leave after it. One turn lets it go.
 */
function letRequestOut(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export async function syncStream(planned: PlannedStream, deps: StreamDeps, opts: StreamOptions, totals: Progress): Promise<StreamResult> {
  const { id } = planned;
  const started = Date.now();
  const counter: RequestCounter = { requests: 0, bytes: 0 };
  const backfill = opts.since !== undefined || opts.until !== undefined;
  await deps.sink.openStream(id);
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
  const path = resultsPath(id.endpoint);

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
      const step = nextStep(page, { where, sent: cursor, records: checked.length, last, limit: opts.pageSize });
      // The next page is on its way while this one is stored: the network overlaps the disk.
      if (!step.done && !deps.signal?.aborted) {
        pending = fetchPage(step.next);
        await letRequestOut();
      }
      // Backfills leave checkpoints alone; an empty last page leaves it where it was.
      const checkpoint = backfill || last === undefined ? undefined : last;
      const counts = await deps.sink.commitPage(id, checked, checkpoint === undefined ? undefined : { from: committed, to: checkpoint });
      if (checkpoint !== undefined) result.cursor = committed = checkpoint;
      result.records += checked.length;
      result.inserted += counts.inserted;
      result.updated += counts.updated;
      totals.records += checked.length;
      totals.requests = deps.client.requests;
      deps.events?.page?.({ stream: id, records: checked.length, progress: { ...totals } });
      if (step.done) break;
      if (deps.signal?.aborted) throw new AbortedError();
      cursor = step.next;
    }
    await deps.sink.endStream(id, undefined, new Date().toISOString());
  } catch (err) {
    if (err instanceof AuthError) throw err;
    if (isAbort(err) && deps.signal?.aborted) {
      result.status = 'interrupted';
    } else {
      if (!(err instanceof ApiError || err instanceof DataError)) throw err;
      result.status = 'failed';
      result.error = err.message;
      result.errorKind = err.kind;
      // A storage failure here (the sink stopped) is thrown on: fatal for the whole pass.
      await deps.sink.endStream(id, err.message, new Date().toISOString());
    }
  } finally {
    result.requests = counter.requests;
    result.bytes = counter.bytes;
    result.durationMs = Date.now() - started;
  }
  return result;
}
