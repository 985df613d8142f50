/**
 * One stream's loop: page from the checkpoint, check each page, commit its records
 * with the checkpoint move, and ask for the next page while this one is stored. A stream's own
 * failure (the service's answer, bad data) ends it with a result; a 401 or a storage failure is
 * thrown on: fatal for the whole pass.
 */
import type { ApiClient, PageAnswer, RequestCounter } from '../api/client.js';
import type { PassProgress, RunEvents } from '../core/events.js';
import type { CheckedRecord, PageQuarantine, QuarantinedRecord, ReportType, StreamId } from '../core/types.js';
import { AbortedError, ApiError, AuthError, DataError, describeRequest, type ErrorKind, isAbort, LeaseLostError } from '../errors.js';
import { resultsPath } from '../spec/paths.js';
import { olderThan } from '../store/model/erase-rule.js';
import type { UpsertCounts } from '../store/model/page.js';
import { mayHoldUnstorable } from '../store/model/storable.js';
import type { Cursors, PageSink } from '../store/port.js';
import type { DriftTracker, StreamDrift } from './drift.js';
import { envelopeCursor, nextStep } from './paginate.js';
import type { PlannedStream } from './plan.js';
import { quarantined } from './quarantine.js';
import { type RecordFault, sortPage } from './records.js';

/** A date window sent as `start_date`/`end_date` (inclusive days, YYYY-MM-DD). */
export interface DateWindow {
  since?: string | undefined;
  until?: string | undefined;
}

export interface StreamOptions {
  reportType: ReportType;
  pageSize: number;
  since?: string | undefined;
  until?: string | undefined;
  full: boolean;
  /**
   * `--lookback`: after the incremental read, re-read this window (checkpoint untouched), so records
   * updated since they were read, or arriving below the checkpoint, reach the mirror.
   */
  lookback?: DateWindow | undefined;
  /**
   * A retention's cut (ms since the epoch): records dated before it are read past but not stored
   * (store/model/erase-rule.ts says what a record's date is); the checkpoint moves past them all the same.
   * These are the only records a checkpoint moves past unstored, and the cut is the mirror's clock's
   * now less the retention (JobStore.now: the server's for a fleet), never a worker's own clock's.
   */
  retainAfter?: number | undefined;
}

export interface StreamDeps {
  client: ApiClient;
  sink: PageSink;
  state: Cursors;
  signal?: AbortSignal | undefined;
  /** Pages and warnings are reported here (core/events.ts). */
  events?: RunEvents | undefined;
  /** Field paths and enumeration values compared with earlier passes (sync/drift.ts); none: not tracked. */
  drift?: DriftTracker | undefined;
}

export type StreamStatus = 'ok' | 'failed' | 'interrupted';

/** What one walk over a stream's pages read and did. */
export interface WalkCounts {
  /** Records read. */
  records: number;
  /** Records new to the destination. */
  inserted: number;
  /** Records whose stored content changed. */
  updated: number;
  pages: number;
  requests: number;
  bytes: number;
  /** Records that failed the record rules and went to the quarantine (the stream went on). */
  quarantined: number;
  /** How many of those failed on each field (`id`, `score`, `campaign.id`…): what the stream's one warning says. */
  quarantinedBy: Record<string, number>;
}

export interface StreamResult extends WalkCounts {
  id: StreamId;
  campaignName: string;
  status: StreamStatus;
  /** The checkpoint after the pass. */
  cursor: bigint | undefined;
  /** The lookback's own counts, when it ran (its records are not in the counts above). */
  lookback?: WalkCounts | undefined;
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

export function emptyCounts(): WalkCounts {
  return { records: 0, inserted: 0, updated: 0, pages: 0, requests: 0, bytes: 0, quarantined: 0, quarantinedBy: {} };
}

/** How one walk reads: from where, in which window, and whether it moves the checkpoint. */
export interface Walk {
  /** `starting_after` of the first request. */
  from: bigint | undefined;
  window: DateWindow;
  /** Move the checkpoint with each page (an incremental or full read), or leave it (backfill, lookback, reconcile). */
  checkpoint: boolean;
  /**
   * Called with each page's records as they are handed to the sink (reconcile collects the ids
   * served), and its quarantined records' ids (undefined for one without a usable id): served too,
   * never gone.
   */
  onPage?: ((records: CheckedRecord[], held: Array<string | undefined>) => void) | undefined;
  /** The stream's drift: each page's new paths and values are committed with it (or refused, --contract strict). */
  drift?: StreamDrift | undefined;
}

/**
 * Reads a stream's pages from `walk.from`, checks each page, commits its records (with the checkpoint
 * move, if the walk moves it) and asks for the next page while this one is stored. One commit in
 * flight: page N+1 is read and checked, and page N+2 asked for, while page N's commitPage is under
 * way; page N+1 is handed only once it resolved. A sink over the network may keep pages deeper in a
 * queue of its own (store/pg/page-queue.ts): all are committed once its settle resolves. Throws the
 * stream's errors; `counts` holds what was done up to them. Returns the checkpoint:
 * `committedAtStart`, moved by the walk.
 */
export async function walkStream(
  id: StreamId,
  deps: StreamDeps,
  opts: { pageSize: number; reportType: ReportType; retainAfter?: number | undefined },
  walk: Walk,
  counts: WalkCounts,
  totals: PassProgress,
  committedAtStart: bigint | undefined,
): Promise<bigint | undefined> {
  const counter: RequestCounter = { requests: 0, bytes: 0 };
  const read = pageReader(id, deps, opts, walk.window, counter);
  const tally = tallier(id, deps, walk, counts, totals);
  let cursor = walk.from;
  // Where the checkpoint stands once the pages handed so far commit: each move is a compare-and-set from it.
  let expected = committedAtStart;
  // The commit of the page handed last, under way while the next page is read and checked.
  let commit: Promise<UpsertCounts> | undefined;
  try {
    if (deps.signal?.aborted) throw new AbortedError();
    let pending = read(cursor);
    for (;;) {
      // A commit that fails while the next page is on its way stops the stream now, not after the
      // request (which may be waiting out retries).
      const fetched = await (commit === undefined ? pending : Promise.race([pending, commit.then(() => pending)]));
      const { checked, served, held, step, proven, quarantine } = sortedPage(id, deps, opts, walk, fetched, cursor, ++counts.pages);
      if (quarantine !== undefined) countQuarantined(counts, quarantine.add);
      // The next page is on its way while this one is stored: the network overlaps the disk.
      if (!step.done && !deps.signal?.aborted) {
        pending = read(step.next);
        await letRequestOut();
      }
      // After the next request left: the walk is off the network's path. Under --contract strict a
      // page bringing something new throws here, before anything of it is written.
      const drift = walk.drift?.page(checked);
      if (commit !== undefined) tally.committed(await commit);
      // An empty last page leaves the checkpoint where it was.
      const move = walk.checkpoint && proven !== undefined ? { from: expected, to: proven } : undefined;
      commit = deps.sink.commitPage(id, checked, move, { quarantine, drift, requestId: fetched.requestId });
      commit.catch(() => {});
      tally.handed(checked, served, held);
      if (move !== undefined) expected = move.to;
      if (step.done) break;
      if (deps.signal?.aborted) throw new AbortedError();
      cursor = step.next;
    }
  } finally {
    counts.requests += counter.requests;
    counts.bytes += counter.bytes;
    await settle(id, deps, commit, tally);
  }
  return expected;
}

/**
 * The end of a walk, also of one that stops (an abort, a bad page): the last page's commit and the
 * pages the sink still has under way are waited for, so what the stream reports is what the
 * destination holds; a commit's own failure is the one thrown.
 */
async function settle(id: StreamId, deps: StreamDeps, commit: Promise<UpsertCounts> | undefined, tally: Tally): Promise<void> {
  try {
    if (commit !== undefined) tally.committed(await commit);
  } finally {
    tally.committed(await deps.sink.settle(id));
  }
}

/** Asks for the page after `after`; the request is awaited later, or dropped if the stream stops first. */
function pageReader(
  id: StreamId,
  deps: StreamDeps,
  opts: { pageSize: number; reportType: ReportType },
  window: DateWindow,
  counter: RequestCounter,
) {
  return (after: bigint | undefined) => {
    const request = deps.client.resultsPage(
      {
        endpoint: id.endpoint,
        campaignId: id.campaignId,
        limit: opts.pageSize,
        reportType: id.endpoint === 'role' ? opts.reportType : undefined,
        startingAfter: after,
        startDate: window.since,
        endDate: window.until,
      },
      counter,
    );
    // Never an unhandled rejection, awaited or not.
    request.catch(() => {});
    return request;
  };
}

/**
 * Page number `n`: its records sorted (a record that fails the rules is quarantined and the page goes
 * on; a page unsound as a whole throws), those older than the retention left out, where paging goes
 * from it, and how far it proves the checkpoint may move.
 */
function sortedPage(
  id: StreamId,
  deps: StreamDeps,
  opts: { pageSize: number; retainAfter?: number | undefined },
  walk: Walk,
  { page, body, requestId }: PageAnswer,
  sent: bigint | undefined,
  n: number,
) {
  const where = `page ${n}, ${describeRequest({ method: 'GET', path: resultsPath(id.endpoint), campaignId: id.campaignId })}`;
  const redact = deps.client.redact;
  const sorted = sortPage(page.data, { where, campaignId: id.campaignId, after: sent, redact, strings: mayHoldUnstorable(body) });
  // Results older than the retention are not stored (the checkpoint still moves past them).
  const served = sorted.records.length;
  const cut = opts.retainAfter;
  const checked = cut === undefined ? sorted.records : sorted.records.filter((r) => !olderThan(r.record, cut));
  const step = nextStep(page, { where, sent, records: page.data.length, last: sorted.last, limit: opts.pageSize, redact });
  // The checkpoint moves no further than the page proves: its last usable order_index, or, when
  // records after that one have none, the envelope's cursor.
  const proven = sorted.tailUnknown ? maxOf(envelopeCursor(page, where, redact), sorted.last) : sorted.last;
  let quarantine: PageQuarantine | undefined;
  if (sorted.faults.length > 0) {
    const { since, until } = walk.window;
    quarantine = { add: quarantined(sorted.faults, page.data, body, { after: sent, since, until, requestId, redact }) };
  }
  return { checked, served, held: heldIds(sorted.faults), step, proven, quarantine };
}

type Tally = ReturnType<typeof tallier>;

/**
 * A walk's counts and progress: a page's records once it is handed to the sink (a walk that returns
 * has them all committed; one whose commit failed throws a storage failure, fatal for the pass), and
 * the new and changed records as the sink reports its commits.
 */
function tallier(id: StreamId, deps: StreamDeps, walk: Walk, counts: WalkCounts, totals: PassProgress) {
  return {
    /** `served`: the page's records that passed the rules, those left out by the retention included. */
    handed(records: CheckedRecord[], served: number, held: Array<string | undefined>): void {
      walk.onPage?.(records, held);
      counts.records += served;
      totals.records += served;
      totals.requests = deps.client.requests;
      deps.events?.page?.({ stream: id, records: served, progress: { ...totals } });
    },
    committed(done: UpsertCounts): void {
      counts.inserted += done.inserted;
      counts.updated += done.updated;
      if (done.conflicts !== undefined) for (const line of conflictWarnings(id, done.conflicts)) deps.events?.warning?.(line);
    },
  };
}

/** The ids of a page's quarantined records (undefined for one without a usable id). */
function heldIds(faults: readonly RecordFault[]): Array<string | undefined> {
  return faults.map((f) => f.id);
}

/** The larger of two cursors, either of which may be missing. */
function maxOf(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a > b ? a : b;
}

/** Adds a page's quarantined records to a walk's counts, by the field each failed on. */
function countQuarantined(counts: WalkCounts, records: readonly QuarantinedRecord[]): void {
  counts.quarantined += records.length;
  for (const r of records) {
    // A reason starts with the field at fault (`id: missing is not a usable id — record 50 of 100, …`);
    // a path cut short or deep (`trace.a.a… (500 levels down): …`) is counted by its first step (`trace…`).
    const at = /^([\w.]+)(…[^:]*)?: /.exec(r.reason);
    const steps = at?.[1]?.split('.') ?? [];
    const field = at === null ? 'record' : steps.length > 3 || at[2] !== undefined ? `${steps[0]}…` : (at[1] as string);
    counts.quarantinedBy[field] = (counts.quarantinedBy[field] ?? 0) + 1;
  }
}

/**
 * The one warning of a stream whose pass quarantined records (its walks together): the campaign, how
 * many records and on which fields, and where to see them. One per stream per pass, not one per
 * page: 30 bad records across 18 pages are one line, and `quarantine list` has each record's reason.
 */
export function quarantineWarning(campaignName: string, id: StreamId, ...walks: ReadonlyArray<WalkCounts | undefined>): string | undefined {
  const by: Record<string, number> = {};
  let total = 0;
  for (const w of walks) {
    if (w === undefined) continue;
    total += w.quarantined;
    for (const [field, n] of Object.entries(w.quarantinedBy)) by[field] = (by[field] ?? 0) + n;
  }
  if (total === 0) return undefined;
  const kind = id.endpoint === 'role' ? `role ${id.reportType}` : 'session';
  const fields = Object.entries(by)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([field, n]) => `${field}: ${n}`)
    .join(', ');
  return `${campaignName} (${kind}): ${total} ${total === 1 ? 'record' : 'records'} failed the record rules and went to the quarantine (${fields}); the stream went on: \`campaign-sync quarantine list\` shows them`;
}

/**
 * The warning for records a stream was served whose ids another campaign holds (store/sqlite/conflicts.ts),
 * one line per campaign that holds them; given the first time the copy is seen, never again.
 */
export function conflictWarnings(id: StreamId, conflicts: ReadonlyArray<{ id: string; kept: string }>): string[] {
  const byKept = new Map<string, string[]>();
  for (const c of conflicts) byKept.set(c.kept, [...(byKept.get(c.kept) ?? []), c.id]);
  return [...byKept].map(([kept, ids]) => {
    const shown = ids.slice(0, 5).join(', ') + (ids.length > 5 ? ` and ${ids.length - 5} more` : '');
    const what =
      ids.length === 1 ? `result ${shown}, which campaign ${kept} holds` : `${ids.length} results (${shown}) that campaign ${kept} holds`;
    return `campaign ${id.campaignId} (stream ${id.key}) was served ${what}: the service gives one result to two campaigns; the first to store it keeps it, and this copy is skipped (counted in \`status\`, not reported again)`;
  });
}

/**
 * What an error does to a stream: the stream's own failure (the service's answer, bad data) is
 * recorded and returned; an abort by the user interrupts it; a 401, a storage failure or a bug is
 * thrown on, fatal for the whole pass.
 */
export async function streamFailure(
  err: unknown,
  id: StreamId,
  deps: StreamDeps,
): Promise<{ status: StreamStatus; error?: string; errorKind?: ErrorKind }> {
  if (err instanceof AuthError) throw err;
  if (isAbort(err) && deps.signal?.aborted) return { status: 'interrupted' };
  // Another worker holds the stream now: its outcome is theirs to record, not this worker's.
  if (err instanceof LeaseLostError) return { status: 'failed', error: err.message, errorKind: err.kind };
  if (!(err instanceof ApiError || err instanceof DataError)) throw err;
  // A record's values quoted by a DataError came from the service too: never the key among them.
  const message = deps.client.redact(err.message);
  // A storage failure here (the sink stopped) is thrown on: fatal for the whole pass.
  await deps.sink.endStream(id, message);
  return { status: 'failed', error: message, errorKind: err.kind };
}

export async function syncStream(
  planned: PlannedStream,
  deps: StreamDeps,
  opts: StreamOptions,
  totals: PassProgress,
): Promise<StreamResult> {
  const { id } = planned;
  const started = performance.now();
  const backfill = opts.since !== undefined || opts.until !== undefined;
  await deps.sink.openStream(id);
  const stored = deps.state.cursor(id);
  const result: StreamResult = {
    id,
    campaignName: planned.campaignName,
    status: 'ok',
    ...emptyCounts(),
    cursor: stored,
    durationMs: 0,
  };
  try {
    const from = opts.full || backfill ? undefined : stored;
    const window = { since: opts.since, until: opts.until };
    const drift = await deps.drift?.open(id);
    drift?.begin();
    result.cursor = await walkStream(id, deps, opts, { from, window, checkpoint: !backfill, drift }, result, totals, stored);
    // Only a read of the whole stream (--full, or after a reset) can say that something disappeared.
    if (drift !== undefined && from === undefined && !backfill && result.records > 0) {
      const gone = drift.gone();
      if (gone.length > 0) await deps.sink.driftGone(id, gone);
    }
    if (opts.lookback && !backfill && !opts.full) {
      result.lookback = emptyCounts();
      drift?.begin();
      await walkStream(
        id,
        deps,
        opts,
        { from: undefined, window: opts.lookback, checkpoint: false, drift },
        result.lookback,
        totals,
        result.cursor,
      );
    }
    await deps.sink.endStream(id, undefined);
  } catch (err) {
    Object.assign(result, await streamFailure(err, id, deps));
  } finally {
    const held = quarantineWarning(planned.campaignName, id, result, result.lookback);
    if (held !== undefined) deps.events?.warning?.(held);
    // The checkpoint is what the database holds now (a walk that failed half-way committed some
    // pages); after a storage failure, what it held before is all that can be said.
    try {
      result.cursor = deps.state.cursor(id);
    } catch {}
    result.durationMs = Math.round(performance.now() - started);
  }
  return result;
}
