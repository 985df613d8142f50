/**
 * The health rule, one pure function shared by `status --check` and watch's `/healthz`:
 * a stream is healthy when its last success is within max-age and it is not failing (a failure is
 * recorded until the stream's next success clears it). The verdict is `ok` when every stream is
 * healthy, `degraded` when some are not, `down` when none is (no streams at all included: a mirror
 * that never synced is not fresh). errors.ts's exitCodeForHealth turns it into 0, 4 or 5.
 *
 * A first sync in progress (a process holds the mirror, and a stream has neither succeeded nor
 * failed yet) is not a stream down: it is being synced for the first time, which a long backfill
 * makes hours. Such a stream is `syncing`, and makes the verdict `degraded` (Nagios WARNING, exit 4),
 * not `down`: not fresh yet, but nothing for anyone to fix. Once it succeeds it is judged as any.
 */

/** What the rule needs of a stream (store/sqlite/checkpoints.ts's StreamRow has it). */
export interface StreamState {
  stream: string;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  /** Set when the service's newest campaign list left the stream's campaign out (see StreamRow). */
  unlisted_since?: string | null;
  /** Set when the campaign's type no longer routes to the stream's endpoint: the stream is retired (see StreamRow). */
  type_changed_to?: string | null;
}

/** The process syncing the mirror now (a run lock's holder, or a fleet's worker holding leases). */
export interface SyncInProgress {
  pid: number;
  host: string;
  /** When it took the mirror (ISO 8601). */
  since: string;
}

export type Unhealthy<S extends StreamState = StreamState> =
  | { row: S; reason: 'failing'; error: string; since: string | null }
  | { row: S; reason: 'never' }
  | { row: S; reason: 'syncing'; by: SyncInProgress }
  | { row: S; reason: 'stale'; ageMs: number };

export type HealthVerdict = 'ok' | 'degraded' | 'down';

export interface Health<S extends StreamState = StreamState> {
  verdict: HealthVerdict;
  healthy: number;
  total: number;
  unhealthy: Unhealthy<S>[];
  /** Streams of campaigns the service no longer lists: left out of the verdict (see assessHealth). */
  unlisted: S[];
  /** Streams of campaigns whose type changed (read through another endpoint now): left out as the unlisted are. */
  retired: S[];
  maxAgeMs: number;
  /** The process syncing the mirror, when one was given (status --check). */
  inProgress?: SyncInProgress | undefined;
}

/**
 * Judges every stream at `now` (ms since the epoch). `inProgress`: the process syncing the mirror
 * now, if any: a stream never synced and not failing is then in its first sync.
 */
export function assessHealth<S extends StreamState>(
  rows: readonly S[],
  now: number,
  maxAgeMs: number,
  inProgress?: SyncInProgress,
): Health<S> {
  const unhealthy: Unhealthy<S>[] = [];
  const unlisted: S[] = [];
  const retired: S[] = [];
  const judged: S[] = [];
  for (const row of rows) {
    // A campaign the service no longer lists cannot be synced, and would be stale for ever: it is
    // named apart and left out of the verdict (its records and checkpoint stay, should it come back).
    if (row.unlisted_since) {
      unlisted.push(row);
      continue;
    }
    // Its campaign is read through another endpoint now: nothing syncs this stream again.
    if (row.type_changed_to) {
      retired.push(row);
      continue;
    }
    judged.push(row);
    if (row.last_error !== null) {
      unhealthy.push({ row, reason: 'failing', error: row.last_error, since: row.last_error_at });
      continue;
    }
    const at = row.last_success_at === null ? Number.NaN : Date.parse(row.last_success_at);
    if (Number.isNaN(at)) unhealthy.push(inProgress ? { row, reason: 'syncing', by: inProgress } : { row, reason: 'never' });
    else if (now - at > maxAgeMs) unhealthy.push({ row, reason: 'stale', ageMs: now - at });
  }
  const healthy = judged.length - unhealthy.length;
  // A first sync under way (its streams, or none committed yet) is no mirror down.
  const starting = inProgress !== undefined && (rows.length === 0 || unhealthy.some((u) => u.reason === 'syncing'));
  const verdict: HealthVerdict = healthy === 0 && !starting ? 'down' : unhealthy.length > 0 || starting ? 'degraded' : 'ok';
  return { verdict, healthy, total: judged.length, unhealthy, unlisted, retired, maxAgeMs, inProgress };
}
