/** `forget`'s closing line, one for the SQLite and the PostgreSQL mirror. */
import { ERASED_IN_TEXT, type ErasedCounts } from '../core/email.js';
import type { ErasureCount, MirrorPlace, Retained } from '../store/port.js';
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

/** Whether a count finds nothing to erase. */
export function nothingCounted(c: ErasureCount): boolean {
  const r = c.rows;
  const copied = Object.values(c.copies).reduce((a, b) => a + b, 0);
  return r.session_results + r.role_results + r.score_details + r.eval_results + r.records_changed + copied === 0 && c.files.length === 0;
}

/**
 * What `forget --older-than` would erase, one line per table (its SQL name, as an analyst queries it)
 * and per NDJSON file, for the question on a terminal and for --dry-run:
 *
 *     Results dated before 2026-03-01T10:00:00.000Z in m.db:
 *       session_results      1,000
 *       …
 *       1,000 lines of out/session_results.ndjson
 */
export function olderCountLines(cut: string, c: ErasureCount, where: string): string[] {
  const rows: Array<[string, number]> = [
    ['session_results', c.rows.session_results],
    ['role_results', c.rows.role_results],
    ['score_details', c.rows.score_details],
    ['eval_results', c.rows.eval_results],
    ...Object.entries(c.copies).filter(([, n]) => n > 0),
  ];
  const counts = rows.map(([, n]) => formatCount(n));
  const nameWidth = Math.max(...rows.map(([name]) => name.length));
  const countWidth = Math.max(...counts.map((n) => n.length));
  const lines = [`Results dated before ${cut} in ${where}:`];
  rows.forEach(([name], i) => {
    lines.push(`  ${name.padEnd(nameWidth)}  ${(counts[i] as string).padStart(countWidth)}`);
  });
  for (const f of c.files) {
    const rewritten = f.changed > 0 ? ` (${formatCount(f.changed)} rewritten)` : '';
    lines.push(`  ${formatCount(f.lines)} line${f.lines === 1 ? '' : 's'} of ${f.path}${rewritten}`);
  }
  if (c.rows.records_changed > 0) lines.push(`  ${formatCount(c.rows.records_changed)} other records rewritten without them`);
  if (c.earlier) lines.push('An erasure an earlier forget left unfinished there is finished first.');
  return lines;
}

/** A retention's erasure (pull, watch), as a line for people: `retention: Erased the results dated before …`. */
export function retainedLine(r: Retained, place: MirrorPlace): string {
  return `retention: ${olderErasedLine(r.before, r.done.rows, placeText(place), r.done.files, r.done.copies)}`;
}

/** A retention's erasure in a --json document. */
export function retainedDocument(r: Retained): object {
  return { before: r.before, removed: r.done.rows, copies: r.done.copies, files: r.done.files };
}
