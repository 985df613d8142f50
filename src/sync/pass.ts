/**
 * One sync pass: list campaigns, plan their streams (plan.ts), and run every stream
 * (stream.ts) from its checkpoint, `concurrency` at a time over one request budget. The first fatal
 * error (401, a storage failure, a bug) stops every stream; the pass waits for them all before it
 * returns or throws. It reports outcomes; the exit code is errors.ts's `exitCodeForPass`.
 */
import type { Campaign } from '../api/envelopes.js';
import type { Progress } from '../core/events.js';
import type { Endpoint } from '../core/types.js';
import { ApiError, AuthError, NothingSynced } from '../errors.js';
import { type PlannedStream, planStreams, type SkippedCampaign, selectCampaigns } from './plan.js';
import {
  type DateWindow,
  emptyCounts,
  type StreamDeps,
  type StreamOptions,
  type StreamResult,
  syncStream,
  type WalkCounts,
} from './stream.js';

export type { Progress, SkippedCampaign, StreamResult };

export interface PassOptions extends StreamOptions {
  /** Campaign ids or names; empty for all. */
  campaigns: string[];
  type?: Endpoint | undefined;
  /** Streams synced at once, over one request budget. */
  concurrency: number;
  /** Which planned streams to check this pass (watch's scheduler, sync/schedule.ts); default all. */
  select?: ((planned: PlannedStream[]) => PlannedStream[]) | undefined;
}

export type PassDeps = StreamDeps;

export interface PassResult {
  streams: StreamResult[];
  skipped: SkippedCampaign[];
  requests: number;
  records: number;
  bytes: number;
  durationMs: number;
  interrupted: boolean;
  /** Streams planned but left for a later pass by `select` (0 without it). */
  unchecked?: number | undefined;
  /** The lookback's window and its counts over all streams, when it ran (its requests are in `requests` too). */
  lookback?: (WalkCounts & { window: DateWindow }) | undefined;
}

/**
 * Lists the campaigns, stores them, and plans the streams the options ask for. 401 throws AuthError;
 * a failed campaign list throws NothingSynced, with the list's own exit code and the requests made.
 */
export async function listAndPlan(
  deps: PassDeps,
  opts: Pick<PassOptions, 'campaigns' | 'type' | 'reportType'>,
): Promise<{ planned: PlannedStream[]; skipped: SkippedCampaign[]; selected: Campaign[] }> {
  let campaigns: Campaign[];
  const requestsBefore = deps.client.requests;
  try {
    campaigns = await deps.client.listCampaigns();
  } catch (err) {
    // Without the campaign list no stream can sync: the error's own kind decides the exit code
    // (5 for a service that is unreachable or failing, 4 for a bad answer).
    if (err instanceof ApiError && !(err instanceof AuthError)) {
      throw new NothingSynced(err, deps.client.requests - requestsBefore);
    }
    throw err;
  }
  await deps.sink.campaigns(campaigns as Array<Record<string, unknown>>, deps.client.lister);
  const selected = selectCampaigns(campaigns, opts.campaigns);
  const { streams: planned, skipped } = planStreams(selected, opts);
  for (const s of skipped)
    deps.events?.warning?.(`campaign ${s.name} (${s.id}) has type ${s.type}, which campaign-sync does not know how to read: skipped`);
  return { planned, skipped, selected };
}

/** Runs one pass; 401 throws AuthError, a failed campaign list throws ApiError (exit 5). */
export async function runPass(deps: PassDeps, opts: PassOptions): Promise<PassResult> {
  // Durations on a monotonic clock: a wall clock set back during the run made them negative.
  const started = performance.now();
  const requestsBefore = deps.client.requests;
  const listed = await listAndPlan(deps, opts);
  const { skipped } = listed;
  const planned = opts.select ? opts.select(listed.planned) : listed.planned;

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
      const done = results[index] as StreamResult;
      deps.events?.streamDone?.({ stream: done.id, status: done.status, progress: { ...totals, requests: deps.client.requests } });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, planned.length)) }, worker));
  deps.signal?.removeEventListener('abort', forward);
  // Whatever happened, what was written is committed before the pass reports; unless a write or
  // commit failed, in which case nothing more was written and that failure is the pass's (exit 74).
  let flushError: unknown;
  try {
    await deps.sink.flush();
  } catch (err) {
    flushError = err;
  }
  if (deps.sink.failure) throw deps.sink.failure;
  if (fatal !== undefined) throw fatal;
  if (flushError !== undefined) throw flushError;

  const streams = results.filter(Boolean);
  const interrupted = deps.signal?.aborted === true;
  let lookback: PassResult['lookback'];
  if (opts.lookback) {
    lookback = { window: opts.lookback, ...emptyCounts() };
    for (const s of streams) {
      if (!s.lookback) continue;
      for (const k of ['records', 'inserted', 'updated', 'pages', 'requests', 'bytes'] as const) lookback[k] += s.lookback[k];
    }
  }
  return {
    lookback,
    unchecked: listed.planned.length - planned.length,
    streams,
    skipped,
    requests: deps.client.requests - requestsBefore,
    records: streams.reduce((n, s) => n + s.records, 0),
    bytes: streams.reduce((n, s) => n + s.bytes, 0),
    durationMs: Math.round(performance.now() - started),
    interrupted,
  };
}
