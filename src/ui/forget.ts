/** `forget`'s closing line, one for the SQLite and the PostgreSQL mirror. */
import { ERASED_IN_TEXT, type ErasedCounts } from '../core/email.js';
import type { MirrorPlace, Retained } from '../store/port.js';
import { showText } from './escape.js';
import { placeText } from './summary.js';
import { formatCount } from './table.js';

/**
 * `Erased <user>: N session results, … from <where>[; N lines from <file>…][; … other records][; … error texts].`
 * `files`: the NDJSON files rewritten (SQLite's mirror only).
 */
export function erasedLine(
  user: string,
  rows: ErasedCounts,
  where: string,
  files: ReadonlyArray<{ path: string; lines: number; changed?: number }> = [],
): string {
  const nested = rows.records_changed + files.reduce((sum, f) => sum + (f.changed ?? 0), 0);
  const others =
    nested === 0
      ? ''
      : `; their part (a score detail, a nested user) taken out of ${formatCount(nested)} other candidate${nested === 1 ? "'s record" : "s' records"}`;
  const versions = rows.result_versions === 0 ? '' : `; ${formatCount(rows.result_versions)} past versions of their results`;
  const n = rows.error_texts;
  const errors =
    n === 0
      ? ''
      : `; their e-mail or id replaced by ${ERASED_IN_TEXT} in ${formatCount(n)} stored error text${n === 1 ? '' : 's'} (a stream's last error)`;
  const q = rows.quarantined ?? 0;
  const quarantined = q === 0 ? '' : `; ${formatCount(q)} quarantined record${q === 1 ? '' : 's'} naming them`;
  return `Erased ${showText(user)}: ${formatCount(rows.session_results)} session results, ${formatCount(rows.role_results)} role results, ${formatCount(rows.score_details)} score details, ${formatCount(rows.eval_results)} eval results from ${where}${files
    .filter((f) => f.lines > 0)
    .map((f) => `; ${formatCount(f.lines)} lines from ${f.path}`)
    .join('')}${versions}${others}${errors}${quarantined}.`;
}

/**
 * `Erased the results dated before <cut>: N session results, … from <where>[; N lines from <file>…][; N rows of <table>…].`
 * `copies`: rows removed from the tables of copies (versions, quarantine).
 */
export function olderErasedLine(
  cut: string,
  rows: ErasedCounts,
  where: string,
  files: ReadonlyArray<{ path: string; lines: number }> = [],
  copies: Readonly<Record<string, number>> = {},
): string {
  return `Erased the results dated before ${cut}: ${formatCount(rows.session_results)} session results, ${formatCount(rows.role_results)} role results, ${formatCount(rows.score_details)} score details, ${formatCount(rows.eval_results)} eval results from ${where}${files
    .filter((f) => f.lines > 0)
    .map((f) => `; ${formatCount(f.lines)} lines from ${f.path}`)
    .join('')}${Object.entries(copies)
    .map(([table, n]) => `; ${formatCount(n)} rows of ${table}`)
    .join('')}.`;
}

/** A retention's erasure (pull, watch), as a line for people: `retention: Erased the results dated before …`. */
export function retainedLine(r: Retained, place: MirrorPlace): string {
  return `retention: ${olderErasedLine(r.before, r.done.rows, placeText(place), r.done.files, r.done.copies)}`;
}

/** A retention's erasure in a --json document. */
export function retainedDocument(r: Retained): object {
  return { before: r.before, removed: r.done.rows, copies: r.done.copies, files: r.done.files };
}
