/**
 * The health rule, one pure function shared by `status --check` and watch's `/healthz`:
 * a stream is healthy when its last success is within max-age and it is not failing (a failure is
 * recorded until the stream's next success clears it). The verdict is `ok` when every stream is
 * healthy, `degraded` when some are not, `down` when none is (no streams at all included: a mirror
 * that never synced is not fresh). errors.ts's exitCodeForHealth turns it into 0, 4 or 5.
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

export type Unhealthy<S extends StreamState = StreamState> =
  | { row: S; reason: 'failing'; error: string; since: string | null }
  | { row: S; reason: 'never' }
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
}

/** Judges every stream at `now` (ms since the epoch). */
export function assessHealth<S extends StreamState>(rows: readonly S[], now: number, maxAgeMs: number): Health<S> {
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
    if (Number.isNaN(at)) unhealthy.push({ row, reason: 'never' });
    else if (now - at > maxAgeMs) unhealthy.push({ row, reason: 'stale', ageMs: now - at });
  }
  const healthy = judged.length - unhealthy.length;
  const verdict: HealthVerdict = healthy === 0 ? 'down' : unhealthy.length > 0 ? 'degraded' : 'ok';
  return { verdict, healthy, total: judged.length, unhealthy, unlisted, retired, maxAgeMs };
}
