/**
 * Which streams a watch pass checks when it cannot afford them all. The service allows
 * 100 requests a minute; a pass over 200 campaigns costs 201, more than a 2-minute interval's
 * budget. Pure: the watch process keeps each stream's times in memory and passes `now`.
 *
 * Priority, highest first:
 * 1. due: never checked, or unchecked for so long that waiting one more interval would exceed
 *    --max-staleness (oldest first): the guarantee that every stream is checked at least every
 *    max-staleness, as long as the budget can cover all streams within it at all;
 * 2. active: found new records within the active window (oldest check first): checked far more often;
 * 3. the rest, longest unchecked first.
 * Each check costs at least one request; the caller gives the requests it can spend on checks.
 */

export interface StreamTimes {
  /** When the stream was last checked (ms), if ever. */
  checkedAt?: number | undefined;
  /** When a check last found new records (ms), if ever. */
  activeAt?: number | undefined;
}

export interface ScheduleOptions {
  /** Requests this pass may spend on streams (the interval's budget minus the campaign list). */
  budget: number;
  intervalMs: number;
  maxStalenessMs: number;
  /** A stream that found records this recently counts as active (default: 3 intervals). */
  activeWindowMs?: number;
}

export interface Schedule<K> {
  check: K[];
  skipped: K[];
}

/** The streams to check now, and those left for a later pass. */
export function scheduleStreams<K>(keys: readonly K[], times: (k: K) => StreamTimes, now: number, opts: ScheduleOptions): Schedule<K> {
  if (keys.length <= opts.budget) return { check: [...keys], skipped: [] };
  const ranked = rankStreams(keys, times, now, opts);
  const n = Math.max(0, Math.floor(opts.budget));
  return { check: ranked.slice(0, n), skipped: ranked.slice(n) };
}

/**
 * Every stream, most behind first (the priorities above). A fleet's worker (several on one
 * PostgreSQL mirror) walks this list with the times every worker shares, taking the first streams
 * no other worker is syncing, up to its share of the budget (`fleetShare`): so the fleet's requests
 * go to the streams most behind, whoever checked them last.
 */
export function rankStreams<K>(keys: readonly K[], times: (k: K) => StreamTimes, now: number, opts: Omit<ScheduleOptions, 'budget'>): K[] {
  const activeWindow = opts.activeWindowMs ?? 3 * opts.intervalMs;
  const rank = (k: K): [number, number] => {
    const t = times(k);
    const checked = t.checkedAt ?? Number.NEGATIVE_INFINITY;
    if (now + opts.intervalMs - checked > opts.maxStalenessMs) return [0, checked];
    if (t.activeAt !== undefined && now - t.activeAt <= activeWindow) return [1, checked];
    return [2, checked];
  };
  const ranked = keys.map((k, i) => ({ k, i, r: rank(k) }));
  ranked.sort((a, b) => a.r[0] - b.r[0] || a.r[1] - b.r[1] || a.i - b.i);
  return ranked.map((x) => x.k);
}

/**
 * A worker's share of a pass's budget when `workers` live workers share one request budget (one key
 * on one PostgreSQL mirror): the fleet together spends what one watch would.
 */
export function fleetShare(budget: number, workers: number): number {
  return Math.max(1, Math.floor(budget / Math.max(1, workers)));
}

/**
 * Requests a pass may spend on streams: the interval's share of the rate, but never less than one
 * window's worth (a pass shorter than the window may use a full window's slots; the request budget
 * still paces them), minus the campaign list.
 */
export function passBudget(rate: { count: number; windowMs: number }, intervalMs: number, listRequests = 1): number {
  const share = Math.floor((rate.count * intervalMs) / rate.windowMs);
  return Math.max(1, Math.max(rate.count, share) - listRequests);
}

/**
 * The longest a stream may wait between checks when the budget cannot check every stream on every
 * pass (ms), in steady state: a pass checks at most `budget` streams and costs one request more (the
 * campaign list); passes come every interval, or slower when the rate paces them; so each stream is
 * checked at least every ceil(streams / budget) passes. Undefined when every stream fits in each
 * pass: then --max-staleness never comes into play. Watch warns when it is over --max-staleness.
 */
export function longestWait(
  streams: number,
  rate: { count: number; windowMs: number },
  intervalMs: number,
  budget: number,
): number | undefined {
  if (streams <= budget) return undefined;
  const passMs = Math.max(intervalMs, ((budget + 1) * rate.windowMs) / rate.count);
  return Math.ceil(streams / budget) * passMs;
}
