/** How health is shown: relative times, the lines of `status --check`, its --json document. */
import { maskPersonal } from '../core/personal.js';
import { formatDuration } from '../core/rate.js';
import { exitCodeForHealth, NagiosCode, type NagiosCodeValue, nagiosCodeForHealth } from '../errors.js';
import { endpointFor } from '../spec/paths.js';
import type { Health, StreamState, SyncInProgress, Unhealthy } from '../sync/health.js';
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

/** The process syncing the mirror, in words: `first sync in progress since <time> (4 min ago), pid 12 on host`. */
export function inProgressText(p: SyncInProgress, now: number): string {
  return `first sync in progress since ${p.since} (${relativeTime(p.since, now)}), pid ${p.pid}${p.host ? ` on ${p.host}` : ''}`;
}

/**
 * Why a stream is unhealthy, in words, without its name. For monitoring (`--check`, its Nagios line,
 * /healthz), which carries it off this host: e-mails and users' ids an error quotes are masked
 * (core/personal.ts), as in an alert; `status` shows the stored text.
 */
export function unhealthyReason(u: Unhealthy, now: number, maxAgeMs: number): string {
  if (u.reason === 'failing') return `failing since ${relativeTime(u.since, now)}: ${maskPersonal(u.error)}`;
  if (u.reason === 'never') return 'never synced successfully';
  if (u.reason === 'syncing') return inProgressText(u.by, now);
  return `stale: last success ${relativeTime(u.row.last_success_at, now)}, older than --max-age ${formatDuration(maxAgeMs)}`;
}

/** A stream's campaign gone from the service's list, as `status` shows it in its table. */
export function unlistedText(row: StreamState, now: number): string {
  return `not listed by the service since ${relativeTime(row.unlisted_since ?? null, now)}`;
}

/** Why a stream is left out of the health rule, in words, without its name. */
export function unlistedReason(row: StreamState, now: number): string {
  return `${unlistedText(row, now)} (the key lost access, or the campaign was removed); left out of the check, its records kept`;
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
  if (startingEmpty(h)) lines.push(showText(`${inProgressText(h.inProgress as SyncInProgress, now)}: no stream has committed yet`));
  const word = h.verdict === 'ok' ? 'OK' : h.verdict === 'degraded' ? 'WARNING' : 'CRITICAL';
  lines.push(`${word}: ${h.healthy} of ${h.total} streams healthy (max age ${formatDuration(h.maxAgeMs)})`);
  return lines;
}

/** A first sync under way that has no stream yet (the campaigns still being listed, or no page committed). */
function startingEmpty(h: Health): boolean {
  return h.inProgress !== undefined && h.total + h.unlisted.length + h.retired.length === 0;
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
      last_error: u.row.last_error === null ? null : maskPersonal(u.row.last_error),
      last_error_at: u.row.last_error_at,
    })),
    ...(h.inProgress === undefined ? {} : { sync_in_progress: h.inProgress }),
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

/** The service's name in a Nagios plugin's status line. */
const PLUGIN = 'CAMPAIGN-SYNC';

const NAGIOS_WORD: Record<NagiosCodeValue, string> = {
  [NagiosCode.ok]: 'OK',
  [NagiosCode.warning]: 'WARNING',
  [NagiosCode.critical]: 'CRITICAL',
  [NagiosCode.unknown]: 'UNKNOWN',
};

/** Plugin text never holds `|`: Nagios reads what follows one as performance data. */
const plain = (text: string) => showText(text).replace(/\|/g, '/');

/**
 * `status --check --nagios`, by the Nagios plugin guidelines: one status line `CAMPAIGN-SYNC
 * WARNING - … | perfdata` (`label=value;warn;crit;min;max`), then one line per unhealthy or unlisted
 * stream (the long output Nagios shows in a service's details), and the exit code 0 to 3.
 */
export function nagiosReport<S extends StreamState>(
  h: Health<S>,
  rows: readonly S[],
  label: (row: S) => string,
  now: number,
): { code: NagiosCodeValue; lines: string[] } {
  const code = nagiosCodeForHealth(h.verdict);
  const count = (reason: Unhealthy['reason']) => h.unhealthy.filter((u) => u.reason === reason).length;
  const failing = count('failing');
  const stale = count('stale');
  const never = count('never');
  const syncing = count('syncing');
  const problems = [
    failing ? `${failing} failing` : undefined,
    stale ? `${stale} stale` : undefined,
    never ? `${never} never synced` : undefined,
    syncing ? `${syncing} in their first sync` : undefined,
    h.unlisted.length ? `${h.unlisted.length} no longer listed` : undefined,
  ].filter(Boolean);
  // The first sync named first: it is why the mirror is not fresh yet, and it is not down.
  const first = h.inProgress !== undefined && (syncing > 0 || startingEmpty(h)) ? `${inProgressText(h.inProgress, now)}: ` : '';
  const summary =
    h.total === 0
      ? startingEmpty(h)
        ? `${first}no stream has committed yet`
        : 'no streams synced yet (run `campaign-sync pull`)'
      : `${first}${h.healthy} of ${h.total} streams healthy${problems.length ? ` (${problems.join(', ')})` : ''}, max age ${formatDuration(h.maxAgeMs)}`;
  const range = `;;;0;${h.total}`;
  const perf = [
    `healthy=${h.healthy}${range}`,
    `stale=${stale}${range}`,
    `failing=${failing}${range}`,
    `never=${never}${range}`,
    `syncing=${syncing}${range}`,
    `unlisted=${h.unlisted.length};;;0`,
  ];
  const oldest = oldestSuccessAge(rows, now);
  if (oldest !== undefined) perf.push(`oldest_success_age=${oldest}s;${Math.round(h.maxAgeMs / 1000)};;0`);
  const lines = [`${PLUGIN} ${NAGIOS_WORD[code]} - ${plain(summary)} | ${perf.join(' ')}`];
  for (const u of h.unhealthy) lines.push(plain(`${label(u.row as S)}: ${unhealthyReason(u, now, h.maxAgeMs)}`));
  for (const row of h.unlisted) lines.push(plain(`${label(row)}: ${unlistedReason(row, now)}`));
  return { code, lines };
}

/** Seconds since the oldest last success among the listed streams that ever succeeded. */
function oldestSuccessAge(rows: readonly StreamState[], now: number): number | undefined {
  let oldest: number | undefined;
  for (const row of rows) {
    const at = row.unlisted_since || row.last_success_at === null ? Number.NaN : Date.parse(row.last_success_at);
    if (!Number.isNaN(at)) oldest = oldest === undefined ? at : Math.min(oldest, at);
  }
  return oldest === undefined ? undefined : Math.max(0, Math.round((now - oldest) / 1000));
}

/** The status line of a check that could not judge (the mirror unreadable, a bad flag): UNKNOWN, exit 3. */
export function nagiosUnknown(message: string): { code: NagiosCodeValue; lines: string[] } {
  return { code: NagiosCode.unknown, lines: [`${PLUGIN} ${NAGIOS_WORD[NagiosCode.unknown]} - ${plain(message)}`] };
}
