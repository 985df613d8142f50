import { createRequire } from 'node:module';
import type TableType from 'cli-table3';
import { CELL_MAX, cell } from './escape.js';

/**
 * How tables come out: on a terminal, boxed and fitted to its width; anywhere else (a pipe, a file),
 * tab-separated values with a header row and no box drawing, as gh does, so `cut` and `awk` work.
 */
export interface TableStyle {
  tsv: boolean;
  /** Terminal columns, when known. */
  width?: number | undefined;
}

const BOXED: TableStyle = { tsv: false };
/** Narrowest a column is cut to when a table must fit the terminal. */
const MIN_COLUMN = 6;

/** A count as a person writes it (`1,234`): in TSV, the digits alone. */
const GROUPED = /^\d{1,3}(,\d{3})+$/;

/**
 * cli-table3, loaded on the first boxed table: a pipe's TSV and a quiet run never pay for it (a light
 * `status`, issue 15).
 */
let TableClass: typeof TableType | undefined;
function cliTable(): typeof TableType {
  TableClass ??= createRequire(import.meta.url)('cli-table3') as typeof TableType;
  return TableClass;
}

/**
 * A plain table for people (no colours in the borders, so logs and pipes stay clean). Every cell is
 * escaped and cut (escape.ts): cells often hold what the service sent. `max` widens a column's cut.
 */
export function renderTable(
  head: string[],
  rows: Array<Array<string | number>>,
  align: Array<'left' | 'right'> = [],
  max: Array<number | undefined> = [],
  style: TableStyle = BOXED,
): string {
  const cells = rows.map((row) => row.map((v, i) => cell(String(v), style.tsv ? Number.POSITIVE_INFINITY : (max[i] ?? CELL_MAX))));
  if (style.tsv) {
    return [head, ...cells.map((row) => row.map((v) => (GROUPED.test(v) ? v.replace(/,/g, '') : v)))].map((r) => r.join('\t')).join('\n');
  }
  // Each column's own width, measured once: fitted to the terminal, then checked for readability.
  const natural = head.map((h, i) => Math.max(length(h), ...cells.map((row) => length(row[i] ?? ''))));
  const widths = fitWidths(natural, style.width);
  if (style.width !== undefined && !readable(natural, widths, style.width)) return stacked(head, cells, style.width);
  const cut = (text: string, i: number) => cell(text, widths[i] ?? CELL_MAX);
  const table = new (cliTable())({
    head: head.map(cut),
    style: { head: [], border: [] },
    colAligns: align,
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const row of cells) table.push(row.map(cut));
  return table.toString();
}

/** Narrowest a fitted column may be and still be read: below it, the table is stacked instead. */
const READABLE = 12;

const length = (s: string) => Array.from(s).length;

/** The columns a boxed table of `columns` columns spends on borders and padding. */
const frame = (columns: number) => 3 * columns + 1;

/** Whether the fitted table fits `width` and keeps each column either whole or READABLE wide. */
function readable(natural: number[], widths: number[], width: number): boolean {
  if (widths.reduce((a, b) => a + b, 0) + frame(widths.length) > width) return false;
  return widths.every((w, i) => w >= Math.min(READABLE, natural[i] as number));
}

/**
 * A table too wide for the terminal, one block a row: the first column as its heading, then
 * `name: value` lines, each cut to the width (a 60-column terminal read `campa…` in every cell).
 */
function stacked(head: string[], cells: string[][], width: number): string {
  const label = Math.max(...head.slice(1).map(length));
  return cells
    .map((row) => {
      const lines = [cell(row[0] ?? '', Math.max(MIN_COLUMN, width))];
      for (let i = 1; i < head.length; i++) {
        const name = `${head[i] ?? ''}:`.padEnd(label + 1);
        lines.push(`  ${name} ${cell(row[i] ?? '', Math.max(MIN_COLUMN, width - label - 4))}`);
      }
      return lines.join('\n');
    })
    .join('\n\n');
}

/** Column widths (from each column's own) that fit `width` (borders and padding included), narrowing the widest first. */
function fitWidths(natural: number[], width: number | undefined): number[] {
  const widths = [...natural];
  if (!width) return widths;
  const budget = width - frame(widths.length);
  let total = widths.reduce((a, b) => a + b, 0);
  while (total > budget) {
    let widest = 0;
    for (let i = 1; i < widths.length; i++) if ((widths[i] as number) > (widths[widest] as number)) widest = i;
    if ((widths[widest] as number) <= MIN_COLUMN) break;
    widths[widest] = (widths[widest] as number) - 1;
    total--;
  }
  return widths;
}

/**
 * `12,345`: en-US digit grouping. Integers are grouped by hand: the first `toLocaleString` of a
 * process loads ICU's number formatting, 15-90 ms, more than all of `status` (issue 15).
 */
export function formatCount(n: number | bigint): string {
  if (typeof n === 'number' && !(Number.isInteger(n) && Math.abs(n) < 1e21)) return n.toLocaleString('en-US');
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** `1 stream`, `2 streams`, `1,000 requests`. */
export function plural(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}
