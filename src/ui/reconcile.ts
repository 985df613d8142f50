/** How a reconcile is shown: a table for people, a document for --json. */
import { exitCodeForReconcile } from '../errors.js';
import type { ReconcileResult } from '../sync/reconcile.js';
import { failureLine, streamFields, typeOf } from './summary.js';
import { type Column, formatCount, formatMs, plural, renderTable, type TableStyle } from './table.js';

/** The failed streams, one line each (what --quiet and --json still print on stderr). */
export function reconcileFailures(result: ReconcileResult): string[] {
  return result.streams.filter((s) => s.status === 'failed').map(failureLine);
}

/**
 * The line an interrupted reconcile ends with (exit 130): how much of the report is whole, and that
 * nothing was pruned where a stream was not read to its end.
 */
export function reconcileInterrupted(result: { streams: ReconcileResult['streams']; planned: number }): string {
  if (result.planned === 0) return 'reconcile interrupted while listing the campaigns: nothing was reconciled';
  const whole = result.streams.filter((s) => s.status === 'ok').length;
  return `reconcile interrupted: ${whole} of ${plural(result.planned, 'stream')} reconciled; the report is incomplete, and nothing was pruned for the rest`;
}

export function reconcileDocument(result: ReconcileResult, prune: boolean) {
  return {
    streams: result.streams.map((s) => ({
      ...streamFields(s),
      served: s.served,
      stored: s.stored,
      added: s.added,
      changed: s.changed,
      gone: s.gone.length,
      gone_ids: s.gone,
      pruned: s.pruned,
      retired_as: s.retired ?? null,
      pages: s.pages,
      requests: s.requests,
      status: s.status,
      error: s.error ?? null,
      duration_ms: s.durationMs,
    })),
    prune,
    requests: result.requests,
    duration_ms: result.durationMs,
    interrupted: result.interrupted,
    exit_code: exitCodeForReconcile(result),
  };
}

/**
 * The report's columns. On a narrow terminal stored goes first (served and gone say what matters),
 * then pruned (left out anyway when nothing was pruned), added and changed; the campaign's name is
 * never cut, as in every table.
 */
const RECONCILE_COLUMNS: Column[] = [
  { head: 'campaign', whole: true },
  { head: 'type' },
  { head: 'served', align: 'right' },
  { head: 'stored', align: 'right', drop: 1 },
  { head: 'added', align: 'right', drop: 3 },
  { head: 'changed', align: 'right', drop: 4 },
  { head: 'gone', align: 'right' },
  { head: 'pruned', align: 'right', drop: 2, optional: true },
  { head: 'status' },
];

export function reconcileTable(result: ReconcileResult, prune: boolean, style?: TableStyle): string {
  const rows = result.streams.map((s) => [
    s.campaignName,
    typeOf(s),
    formatCount(s.served),
    formatCount(s.stored),
    formatCount(s.added),
    formatCount(s.changed),
    formatCount(s.gone.length),
    prune ? formatCount(s.pruned) : '-',
    s.retired === undefined ? s.status : `retired (type now ${s.retired})`,
  ]);
  const gone = result.streams.reduce((n, s) => n + s.gone.length, 0);
  const pruned = result.streams.reduce((n, s) => n + s.pruned, 0);
  const lines = [
    result.streams.length === 0 ? 'No streams to reconcile.' : renderTable(RECONCILE_COLUMNS, rows, style),
    [
      plural(result.streams.length, 'stream'),
      `${formatCount(gone)} gone`,
      prune ? `${formatCount(pruned)} pruned` : gone > 0 ? 'nothing pruned (add --prune to remove them)' : undefined,
      plural(result.requests, 'request'),
      formatMs(result.durationMs),
      result.interrupted ? 'interrupted' : undefined,
    ]
      .filter(Boolean)
      .join(', '),
  ];
  for (const line of reconcileFailures(result)) lines.push(`  failed: ${line}`);
  return lines.join('\n');
}
