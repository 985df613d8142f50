/**
 * What `--notify` tells (app/notify.ts): a stream's state after a pass, and the changes since the state
 * last delivered. States follow the health rule (sync/health.ts): `unlisted` (the service no longer
 * lists the campaign, or lists it under another type: the stream is retired), `failing` (its last error stands), `stale` (no success within max-age), else
 * `ok`. A change to a bad state is told with that state; a change back to `ok` is told as `recovered`.
 * A stream with no state delivered yet counts as `ok`: a healthy mirror sends nothing, ever.
 */
import type { StreamRow } from '../store/port.js';

export type StreamAlertState = 'ok' | 'failing' | 'stale' | 'unlisted';
export type AlertState = Exclude<StreamAlertState, 'ok'> | 'recovered';

export interface StateChange {
  row: StreamRow;
  /** What the notification says. */
  state: AlertState;
  /** The state delivered before (`ok` when none was). */
  previous: StreamAlertState;
  /** No state was delivered for the stream before, and it never succeeded: a stream new to its alerts. */
  first: boolean;
  /** What to record once it is delivered. */
  record: StreamAlertState;
}

/** A stream's state at `now`. A stream that never synced and has no error (not tried yet) is `ok`. */
export function streamState(row: StreamRow, now: number, maxAgeMs: number): StreamAlertState {
  if (row.unlisted_since || row.type_changed_to) return 'unlisted';
  if (row.last_error !== null) return 'failing';
  const at = row.last_success_at === null ? Number.NaN : Date.parse(row.last_success_at);
  if (!Number.isNaN(at) && now - at > maxAgeMs) return 'stale';
  return 'ok';
}

const KNOWN = new Set<string>(['ok', 'failing', 'stale', 'unlisted']);

/** The streams whose state differs from the one last delivered (`notified`, by stream key). */
export function stateChanges(
  rows: readonly StreamRow[],
  notified: ReadonlyMap<string, string>,
  now: number,
  maxAgeMs: number,
): StateChange[] {
  const changes: StateChange[] = [];
  for (const row of rows) {
    const stored = notified.get(row.stream);
    const previous = (stored !== undefined && KNOWN.has(stored) ? stored : 'ok') as StreamAlertState;
    const current = streamState(row, now, maxAgeMs);
    if (current === previous) continue;
    const first = stored === undefined && row.last_success_at === null;
    changes.push({ row, state: current === 'ok' ? 'recovered' : current, previous, first, record: current });
  }
  return changes;
}

/** The service's request_id in a stored error (errors.ts writes it as `[request_id …]`). */
export function requestIdOf(error: string | null): string | null {
  if (error === null) return null;
  return /\[request_id ([^\]\s]+)\]/.exec(error)?.[1] ?? null;
}
