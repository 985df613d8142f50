/**
 * `reconcile`: re-walks each stream from the start, upserts what it reads, and
 * compares what the service serves with what the destination holds. A record stored but no longer
 * served is `gone`; with `prune` it is removed (SQLite: the row with its score details and eval
 * results) or tombstoned (NDJSON: one line, exactly once). Checkpoints are left alone. A stream whose
 * walk fails is reported and nothing of it is pruned: what was not read cannot be called gone.
 */
import type { Campaign } from '../api/envelopes.js';
import type { PassProgress } from '../core/events.js';
import { type Endpoint, type StreamId, streamId } from '../core/types.js';
import { UsageError } from '../errors.js';
import { endpointFor } from '../spec/paths.js';
import { listAndPlan, type PassDeps, type PassOptions } from './pass.js';
import type { PlannedStream } from './plan.js';
import { emptyCounts, quarantineWarning, type StreamStatus, streamFailure, walkStream } from './stream.js';

/** A stream the destination holds (its row in `sync_state`). */
export type HeldStream = Pick<StreamId, 'campaignId' | 'endpoint' | 'reportType'>;

export type ReconcileOptions = Pick<PassOptions, 'campaigns' | 'type' | 'reportType' | 'pageSize'> & {
  prune: boolean;
  /** The streams the destination holds before the reconcile: which report type it mirrors. */
  held: readonly HeldStream[];
};

export interface ReconcileStream {
  id: StreamId;
  campaignName: string;
  status: StreamStatus;
  /** Records the service serves now. */
  served: number;
  /** Records the destination held before. */
  stored: number;
  /** Served and not stored before. */
  added: number;
  /** Stored with other content. */
  changed: number;
  /** Stored but no longer served: the ids. */
  gone: string[];
  /** Removed (SQLite) or tombstoned (NDJSON) by --prune. */
  pruned: number;
  /**
   * The campaign's type now, when it no longer routes to this stream (the type changed): the stream
   * is retired, not walked, and every record it holds is gone.
   */
  retired?: string | undefined;
  pages: number;
  requests: number;
  error?: string | undefined;
  errorKind?: import('../errors.js').ErrorKind | undefined;
  durationMs: number;
}

export interface ReconcileResult {
  streams: ReconcileStream[];
  /** How many streams were to be reconciled (an interrupted run reports fewer). */
  planned: number;
  requests: number;
  durationMs: number;
  interrupted: boolean;
}

/**
 * Refuses (exit 2) to reconcile a campaign's role results as a report type the destination does not
 * mirror for it: records are upserted by id, so reading OVERALL over a DETAILED mirror would replace
 * every stored report (and its score details in `raw`), and its new stream row would be one nothing
 * syncs, stale in `status --check` for ever. A campaign with no role stream yet is held to the report
 * types the database mirrors for the others; an empty database takes any.
 */
export function checkReportType(planned: readonly PlannedStream[], held: readonly HeldStream[], reportType: string): void {
  const typesOf = (campaignId?: string) =>
    new Set(
      held
        .filter((h) => h.endpoint === 'role' && (campaignId === undefined || h.campaignId === campaignId))
        .map((h) => String(h.reportType)),
    );
  const everywhere = typesOf();
  const refused = planned
    .filter((p) => p.id.endpoint === 'role')
    .map((p) => {
      const own = typesOf(p.id.campaignId);
      return { p, own: own.size > 0, types: own.size > 0 ? own : everywhere };
    })
    .filter((r) => r.types.size > 0 && !r.types.has(reportType));
  const first = refused[0];
  if (first === undefined) return;
  const types = [...first.types].sort().join(' and ');
  const which = `"${first.p.campaignName}" (${first.p.id.campaignId})`;
  const more = refused.length > 1 ? ` and ${refused.length - 1} more campaign${refused.length > 2 ? 's' : ''}` : '';
  const what = first.own
    ? `this database mirrors the role results of ${which}${more} as ${types}`
    : `this database mirrors role results as ${types}, and none yet of ${which}${more}`;
  // Reading another report type would overwrite the stored reports, or add a stream nothing syncs.
  throw new UsageError(
    `--report-type ${reportType}: ${what}; reconcile compares the report type a mirror holds, so nothing was reconciled: give --report-type ${[...first.types].sort()[0]}`,
  );
}

export async function reconcile(deps: PassDeps, opts: ReconcileOptions): Promise<ReconcileResult> {
  const started = performance.now();
  const requestsBefore = deps.client.requests;
  const { planned, selected } = await listAndPlan(deps, opts);
  checkReportType(planned, opts.held, opts.reportType);
  const retired = retiredStreams(opts.held, selected, opts.type);
  const totals: PassProgress = { streamsDone: 0, streams: planned.length + retired.length, records: 0, requests: deps.client.requests };
  const streams: ReconcileStream[] = [];
  // One stream at a time: the request budget, not the CPU, bounds a full re-read.
  for (const { id, campaignName } of planned) {
    if (deps.signal?.aborted) break;
    const streamStarted = performance.now();
    await deps.sink.openStream(id);
    const stored = new Set(await deps.sink.storedIds(id));
    const served = new Set<string>();
    const counts = emptyCounts();
    const result: ReconcileStream = {
      id,
      campaignName,
      status: 'ok',
      served: 0,
      stored: stored.size,
      added: 0,
      changed: 0,
      gone: [],
      pruned: 0,
      pages: 0,
      requests: 0,
      durationMs: 0,
    };
    try {
      // Quarantined records of the walk without a usable id.
      let unknown = 0;
      const walk = {
        from: undefined,
        window: {},
        checkpoint: false,
        onPage: (records: Array<{ id: string }>, held: Array<string | undefined>) => {
          for (const r of records) served.add(r.id);
          // Quarantined, but served: not gone. One without an id may be any stored record.
          for (const r of held) {
            if (r === undefined) unknown++;
            else served.add(r);
          }
        },
      };
      await walkStream(id, deps, opts, walk, counts, totals, deps.state.cursor(id));
      result.gone = [...stored].filter((r) => !served.has(r));
      if (opts.prune && result.gone.length > 0 && unknown > 0) {
        deps.events?.warning?.(
          `stream ${id.key}: not pruned: ${unknown} quarantined ${unknown === 1 ? 'record has' : 'records have'} no usable id and may be among the ${result.gone.length} not served (retry or drop them, then reconcile again)`,
        );
      } else if (opts.prune && result.gone.length > 0) result.pruned = await deps.sink.prune(id, result.gone);
      await deps.sink.endStream(id, undefined);
    } catch (err) {
      Object.assign(result, await streamFailure(err, id, deps));
    }
    const held = quarantineWarning(campaignName, id, counts);
    if (held !== undefined) deps.events?.warning?.(held);
    result.served = served.size;
    result.added = counts.inserted;
    result.changed = counts.updated;
    result.pages = counts.pages;
    result.requests = counts.requests;
    result.durationMs = Math.round(performance.now() - streamStarted);
    streams.push(result);
    totals.streamsDone++;
    deps.events?.streamDone?.({ stream: id, status: result.status, progress: { ...totals, requests: deps.client.requests } });
  }
  for (const r of retired) {
    if (deps.signal?.aborted) break;
    streams.push(await reconcileRetired(deps, r, opts.prune));
    totals.streamsDone++;
    deps.events?.streamDone?.({ stream: r.id, status: 'ok', progress: { ...totals, requests: deps.client.requests } });
  }
  await deps.sink.flush();
  return {
    streams,
    planned: planned.length + retired.length,
    requests: deps.client.requests - requestsBefore,
    durationMs: Math.round(performance.now() - started),
    // Interrupted only when a stream was cut short or never reached: a signal after the last stream
    // was read leaves a whole report.
    interrupted: deps.signal?.aborted === true && (streams.length < planned.length || streams.some((s) => s.status === 'interrupted')),
  };
}

/**
 * The held streams of the selected campaigns whose type no longer routes to them (a campaign whose
 * type changed): nothing serves them any more. `type` (--type) keeps only its endpoint's.
 */
function retiredStreams(held: readonly HeldStream[], selected: readonly Campaign[], type: Endpoint | undefined) {
  const byId = new Map(selected.map((c) => [c.id, c]));
  const out: Array<{ id: StreamId; campaignName: string; now: string }> = [];
  for (const h of held) {
    const c = byId.get(h.campaignId);
    if (c === undefined || endpointFor(c.type) === h.endpoint || (type !== undefined && type !== h.endpoint)) continue;
    out.push({
      id: streamId(h.campaignId, h.endpoint, h.reportType),
      campaignName: c.name ?? c.display_name ?? c.id,
      now: String(c.type ?? 'none'),
    });
  }
  return out;
}

/** A retired stream: no request; every record it holds is gone, and with `prune` removed (or tombstoned). */
async function reconcileRetired(
  deps: PassDeps,
  r: { id: StreamId; campaignName: string; now: string },
  prune: boolean,
): Promise<ReconcileStream> {
  const started = performance.now();
  await deps.sink.openStream(r.id);
  const gone = await deps.sink.storedIds(r.id);
  const pruned = prune && gone.length > 0 ? await deps.sink.prune(r.id, gone) : 0;
  return {
    id: r.id,
    campaignName: r.campaignName,
    status: 'ok',
    served: 0,
    stored: gone.length,
    added: 0,
    changed: 0,
    gone,
    pruned,
    pages: 0,
    requests: 0,
    retired: r.now,
    durationMs: Math.round(performance.now() - started),
  };
}
