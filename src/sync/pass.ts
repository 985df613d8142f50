/**
 * One sync pass: list campaigns, plan their streams (plan.ts), and run every stream
 * (stream.ts) from its checkpoint, `concurrency` at a time over one request budget. The first fatal
 * error (401, a storage failure, a bug) stops every stream; the pass waits for them all before it
 * returns or throws. It reports outcomes; the exit code is errors.ts's `exitCodeForPass`.
 *
 * On a mirror several workers sync (`deps.leases`: PostgreSQL's), each stream is taken by a lease
 * first and given back when done. A stream another worker holds is not fought over: the pass syncs
 * the free ones, then asks again for the busy ones until it takes each, or finds that a sync of it
 * which began after this pass did has completed (it is then not synced twice).
 */
import type { Campaign } from '../api/envelopes.js';
import { sleep } from '../core/clock.js';
import type { PassProgress } from '../core/events.js';
import type { Endpoint } from '../core/types.js';
import { ApiError, AuthError, NothingSynced } from '../errors.js';
import type { StreamLeases } from '../store/model/stream-leases.js';
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

export type { PassProgress, SkippedCampaign, StreamResult };

export interface PassOptions extends StreamOptions {
  /** Campaign ids or names; empty for all. */
  campaigns: string[];
  type?: Endpoint | undefined;
  /** Streams synced at once, over one request budget. */
  concurrency: number;
  /** A stream another worker holds is left to it, not waited for (pull --if-idle, a fleet's watch). */
  skipBusy?: boolean | undefined;
  /**
   * At most this many streams synced in the pass (a fleet's watch: its share of the budget); the
   * selected streams past it are there for those that another worker holds or has just synced. A
   * function is given the number of streams selected.
   */
  limit?: number | ((selected: number) => number) | undefined;
  /** Which planned streams to check this pass (watch's scheduler, sync/schedule.ts); default all. */
  select?: ((planned: PlannedStream[]) => PlannedStream[]) | undefined;
}

export interface PassDeps extends StreamDeps {
  /**
   * The stream leases of a mirror a fleet syncs (given when its capabilities say `fleet`: app/sync-job.ts);
   * none: this process syncs it alone, under its run lock.
   */
  leases?: StreamLeases | undefined;
}

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
  /** Streams another worker synced while this pass ran (their sync began after it started), or held (skipBusy): not synced here. */
  elsewhere?: number | undefined;
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
  const limit = typeof opts.limit === 'function' ? opts.limit(planned.length) : (opts.limit ?? Number.POSITIVE_INFINITY);
  const totals: PassProgress = {
    streamsDone: 0,
    streams: Math.min(planned.length, limit),
    records: 0,
    requests: deps.client.requests,
  };
  const results: StreamResult[] = new Array(planned.length);
  let fatal: unknown;
  let next = 0;
  const leases = deps.leases;
  const passStart = leases === undefined || planned.length === 0 ? '' : await leases.begin();
  // Streams another worker held when asked, and how many of them are being asked for again now.
  const busy: number[] = [];
  let asking = 0;
  let elsewhere = 0;
  let taken = 0;
  /** The next stream this worker may sync (its lease taken), or undefined when none is left. */
  const take = async (): Promise<number | undefined> => {
    // Stopped (a signal), the streams not yet started still report `interrupted`, as before any
    // lease; only the waiting for busy ones ends.
    while (fatal === undefined && taken < limit) {
      const fresh = next < planned.length;
      const index = fresh ? next++ : signal.aborted ? undefined : busy.shift();
      if (index === undefined) {
        if (asking === 0 || signal.aborted) return undefined;
        // Another worker of this pass is asking for the last busy ones: they may come back.
        await sleep(leases?.retryMs ?? 100, signal).catch(() => {});
        continue;
      }
      if (leases === undefined) {
        taken++;
        return index;
      }
      asking++;
      let claim: Awaited<ReturnType<typeof leases.claim>>;
      try {
        claim = await leases.claim((planned[index] as PlannedStream).id.key, passStart);
      } finally {
        asking--;
      }
      if (claim === 'taken') {
        // Counted once taken; a lease taken past the limit by a worker slot racing another is still synced.
        taken++;
        return index;
      }
      if (claim === 'done' || (claim === 'busy' && opts.skipBusy)) {
        elsewhere++;
        totals.streams--;
        continue;
      }
      busy.push(index);
      // Asked again after a while; a fresh stream is tried at once.
      if (next >= planned.length) await sleep(leases.retryMs, signal).catch(() => {});
    }
    return undefined;
  };
  const worker = async () => {
    while (fatal === undefined) {
      let index: number | undefined;
      try {
        index = await take();
      } catch (err) {
        fatal ??= err;
        stop.abort();
        return;
      }
      if (index === undefined) return;
      const stream = planned[index] as PlannedStream;
      try {
        results[index] = await syncStream(stream, { ...deps, signal }, opts, totals);
        await leases?.release(stream.id.key, results[index]?.status === 'ok');
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
      for (const k of ['records', 'inserted', 'updated', 'pages', 'requests', 'bytes', 'quarantined'] as const)
        lookback[k] += s.lookback[k];
    }
  }
  return {
    lookback,
    // With a limit, the selected streams it left out are unchecked too.
    unchecked: listed.planned.length - (opts.limit === undefined ? planned.length : streams.length + elsewhere),
    elsewhere,
    streams,
    skipped,
    requests: deps.client.requests - requestsBefore,
    records: streams.reduce((n, s) => n + s.records, 0),
    bytes: streams.reduce((n, s) => n + s.bytes, 0),
    durationMs: Math.round(performance.now() - started),
    interrupted,
  };
}
