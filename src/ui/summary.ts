/** How a pass is shown: a table for people, a document for --json, a one-liner for watch logs. */

import { formatDuration, formatRate, type Rate } from '../core/rate.js';
import type { StreamId } from '../core/types.js';
import { exitCodeForPass } from '../errors.js';
import type { MirrorPlace } from '../store/port.js';
import type { PassResult } from '../sync/pass.js';
import type { WalkCounts } from '../sync/stream.js';
import { showText } from './escape.js';
import { type Column, formatCount, formatMs, plural, renderTable, type TableStyle } from './table.js';

/** Records a stream's pass quarantined, its lookback's included. */
function quarantinedIn(s: { quarantined: number; lookback?: WalkCounts | undefined }): number {
  return s.quarantined + (s.lookback?.quarantined ?? 0);
}

/** What pass and reconcile results say of each stream. */
interface StreamFacts {
  id: StreamId;
  campaignName: string;
  error?: string | undefined;
}

/** `session` or `role DETAILED`: a stream's kind as a table shows it. */
export function typeOf(s: StreamFacts): string {
  return s.id.endpoint === 'role' ? `role ${s.id.reportType}` : 'session';
}

/** `<campaign> (<endpoint>[ <report type>]): <error>`, escaped: a failed stream on one line. */
export function failureLine(s: StreamFacts): string {
  return showText(`${s.campaignName} (${typeOf(s)}): ${s.error}`);
}

/** The fields naming a stream in --json documents. */
export function streamFields(s: StreamFacts) {
  return { campaign_id: s.id.campaignId, campaign_name: s.campaignName, endpoint: s.id.endpoint, report_type: s.id.reportType };
}

/**
 * The failed streams of a pass, one line each (without the `error:` prefix Output adds): what
 * `--quiet` still prints on stderr, so that cron mails a failed sync.
 */
export function failureLines(result: PassResult): string[] {
  return result.streams.filter((s) => s.status === 'failed').map(failureLine);
}

/** The `--json` document of `pull` (cursor as a string: it is an int64). */
export function passDocument(result: PassResult) {
  return {
    streams: result.streams.map((s) => ({
      ...streamFields(s),
      records: s.records,
      new: s.inserted,
      updated: s.updated,
      pages: s.pages,
      requests: s.requests,
      bytes: s.bytes,
      cursor: s.cursor === undefined ? null : s.cursor.toString(),
      status: s.status,
      quarantined: quarantinedIn(s),
      error: s.error ?? null,
      duration_ms: s.durationMs,
      lookback: s.lookback ? countsDocument(s.lookback) : null,
    })),
    lookback: result.lookback
      ? { since: result.lookback.window.since, until: result.lookback.window.until, ...countsDocument(result.lookback) }
      : null,
    skipped: result.skipped,
    requests: result.requests,
    records: result.records,
    bytes: result.bytes,
    duration_ms: result.durationMs,
    interrupted: result.interrupted,
    checked: result.streams.length,
    unchecked: result.unchecked ?? 0,
    exit_code: exitCodeForPass(result),
  };
}

function countsDocument(c: WalkCounts) {
  return {
    records: c.records,
    new: c.inserted,
    updated: c.updated,
    pages: c.pages,
    requests: c.requests,
    bytes: c.bytes,
    quarantined: c.quarantined,
  };
}

/**
 * The summary's columns. On a narrow terminal pages go first, then requests (the line under the
 * table has the total), time and updated; the campaign's name is never cut. `quarantined` shows
 * only when a stream held records back: an `ok` stream may still miss records until they are
 * retried or dropped.
 */
const PASS_COLUMNS: Column[] = [
  { head: 'campaign', whole: true },
  { head: 'type' },
  { head: 'new', align: 'right' },
  { head: 'updated', align: 'right', drop: 4 },
  { head: 'pages', align: 'right', drop: 1 },
  { head: 'requests', align: 'right', drop: 2 },
  { head: 'time', align: 'right', drop: 3 },
  { head: 'quarantined', align: 'right', drop: 5, optional: true },
  { head: 'status' },
];

/** The table printed at the end of `pull`, followed by failures and skipped campaigns. */
export function passTable(result: PassResult, style?: TableStyle): string {
  const rows = result.streams.map((s) => [
    s.campaignName,
    typeOf(s),
    formatCount(s.inserted),
    formatCount(s.updated),
    formatCount(s.pages),
    formatCount(s.requests),
    formatMs(s.durationMs),
    formatCount(quarantinedIn(s)),
    s.status,
  ]);
  const lines = [result.streams.length === 0 ? 'No streams to sync.' : renderTable(PASS_COLUMNS, rows, style), passLine(result)];
  // Names, ids, types and errors come from the service: escaped, but not cut (the whole error helps).
  for (const s of result.streams) if (s.error) lines.push(`  failed: ${failureLine(s)}`);
  for (const s of result.skipped) lines.push(`  skipped: ${showText(`${s.name} (${s.id}): type ${s.type}`)} is not supported`);
  return lines.join('\n');
}

/** One line per pass: fit for journald and cron mail. */
export function passLine(result: PassResult): string {
  const failed = result.streams.filter((s) => s.status === 'failed').length;
  const inserted = result.streams.reduce((n, s) => n + s.inserted, 0);
  const updated = result.streams.reduce((n, s) => n + s.updated, 0);
  const parts = [
    `${formatCount(result.records)} records (${formatCount(inserted)} new, ${formatCount(updated)} updated)`,
    plural(result.streams.length, 'stream'),
    plural(result.requests, 'request'),
    formatMs(result.durationMs),
  ];
  const quarantined = result.streams.reduce((n, s) => n + quarantinedIn(s), 0);
  if (quarantined > 0) parts.push(`${formatCount(quarantined)} quarantined (\`campaign-sync quarantine list\`)`);
  if (failed > 0) parts.push(`${failed} failed`);
  if (result.skipped.length > 0) parts.push(`${result.skipped.length} skipped`);
  if (result.unchecked) parts.push(`${formatCount(result.unchecked)} left for a later pass (request budget)`);
  if (result.lookback) parts.push(lookbackText(result.lookback));
  if (result.interrupted) parts.push('interrupted');
  return parts.join(', ');
}

/** `lookback since 2026-11-16: 120 re-read (1 new, 2 updated), 4 requests` */
function lookbackText(l: NonNullable<PassResult['lookback']>): string {
  return `lookback since ${l.window.since}: ${formatCount(l.records)} re-read (${formatCount(l.inserted)} new, ${formatCount(l.updated)} updated), ${plural(l.requests, 'request')}`;
}

/** Where a job writes, for people: the database, the NDJSON folder (and the database of its checkpoints), or the PostgreSQL mirror. */
export function placeText(place: MirrorPlace): string {
  if (place.kind === 'ndjson') return `${place.out} (NDJSON; checkpoints in ${place.db})`;
  return place.kind === 'pg' ? place.name : place.db;
}

/** Where a pass wrote, in one line: a profile or a variable may have chosen it, unseen on the command line. */
export function placeLine(place: MirrorPlace): string {
  return `written to ${placeText(place)}`;
}

/** The line a watch starts with, for journald: the service, the mirror, the interval and the request budget. */
export function watchStartLine(service: URL, place: MirrorPlace, intervalMs: number, rate: Rate): string {
  const base = `${service.origin}${service.pathname.replace(/\/+$/, '')}`;
  return `watching ${base} into ${placeText(place)} every ${formatDuration(intervalMs)}, request budget ${formatRate(rate)}`;
}

/** The same, for --json documents. */
export function placeDocument(place: MirrorPlace) {
  return place.kind === 'ndjson'
    ? { format: 'ndjson', out: place.out, db: place.db }
    : place.kind === 'pg'
      ? { format: 'postgres', db: place.name }
      : { format: 'sqlite', db: place.db };
}
