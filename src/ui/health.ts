/** How health is shown: relative times, the lines of `status --check`, its --json document. */
import { formatDuration } from '../core/rate.js';
import { exitCodeForHealth } from '../errors.js';
import { endpointFor } from '../spec/paths.js';
import type { Health, StreamState, Unhealthy } from '../sync/health.js';
import { showText } from './escape.js';

/** `12 s ago`, `4 min ago`, `3 h ago`, `2 d ago`; `never` for null; `in the future` for a skewed clock. */
export function relativeTime(iso: string | null, now: number): string {
  if (iso === null) return 'never';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const s = Math.round((now - at) / 1000);
  if (s < -5) return 'in the future';
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** Why a stream is unhealthy, in words, without its name. */
export function unhealthyReason(u: Unhealthy, now: number, maxAgeMs: number): string {
  if (u.reason === 'failing') return `failing since ${relativeTime(u.since, now)}: ${u.error}`;
  if (u.reason === 'never') return 'never synced successfully';
  return `stale: last success ${relativeTime(u.row.last_success_at, now)}, older than --max-age ${formatDuration(maxAgeMs)}`;
}

/** A stream's campaign gone from the service's list, as `status` shows it in its table. */
export function unlistedSince(row: StreamState, now: number): string {
  return `not listed by the service since ${relativeTime(row.unlisted_since ?? null, now)}`;
}

/** Why a stream is left out of the health rule, in words, without its name. */
export function unlistedReason(row: StreamState, now: number): string {
  return `${unlistedSince(row, now)} (the key lost access, or the campaign was removed); left out of the check, its records kept`;
}

/** A stream whose campaign changed type, as `status` shows it in its table. */
export function retiredAs(row: StreamState): string {
  const type = row.type_changed_to ?? 'none';
  const endpoint = endpointFor(type);
  return `retired: the campaign's type is now ${type}, ${endpoint ? `read from the ${endpoint} endpoint` : 'which campaign-sync does not read'}`;
}

/** Why a retired stream is left out of the health rule, in words, without its name. */
export function retiredReason(row: StreamState): string {
  return `${retiredAs(row)}; left out of the check, its records kept (\`reconcile --prune\` removes them, \`reset --campaign\` the stream)`;
}

/** One line per unhealthy stream, one per stream left out, then the verdict: what a monitoring check prints. */
export function healthLines<S extends StreamState>(h: Health<S>, label: (row: S) => string, now: number): string[] {
  const lines = h.unhealthy.map((u) => showText(`${label(u.row as S)}: ${unhealthyReason(u, now, h.maxAgeMs)}`));
  for (const row of h.unlisted) lines.push(showText(`${label(row)}: ${unlistedReason(row, now)}`));
  for (const row of h.retired) lines.push(showText(`${label(row)}: ${retiredReason(row)}`));
  const word = h.verdict === 'ok' ? 'OK' : h.verdict === 'degraded' ? 'WARNING' : 'CRITICAL';
  lines.push(`${word}: ${h.healthy} of ${h.total} streams healthy (max age ${formatDuration(h.maxAgeMs)})`);
  return lines;
}

export function healthDocument<S extends StreamState>(h: Health<S>, label: (row: S) => string, now: number) {
  return {
    status: h.verdict,
    exit_code: exitCodeForHealth(h.verdict),
    healthy: h.healthy,
    streams: h.total,
    max_age_ms: h.maxAgeMs,
    unhealthy: h.unhealthy.map((u) => ({
      stream: u.row.stream,
      name: label(u.row as S),
      reason: u.reason,
      detail: unhealthyReason(u, now, h.maxAgeMs),
      last_success_at: u.row.last_success_at,
      last_error: u.row.last_error,
      last_error_at: u.row.last_error_at,
    })),
    unlisted: h.unlisted.map((row) => ({
      stream: row.stream,
      name: label(row),
      listed_last_at: row.unlisted_since ?? null,
      detail: unlistedReason(row, now),
    })),
    retired: h.retired.map((row) => ({
      stream: row.stream,
      name: label(row),
      type_now: row.type_changed_to ?? null,
      detail: retiredReason(row),
    })),
  };
}
