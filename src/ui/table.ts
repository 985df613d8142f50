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

/** One column of a table, and what it gives up when the terminal is too narrow for the whole table. */
export interface Column {
  head: string;
  align?: 'left' | 'right';
  /** Longest a cell is shown, with an ellipsis (default CELL_MAX); --json has the whole value. */
  max?: number;
  /** Narrowest the column is cut to (with an ellipsis) before a column is dropped; without it the column is never cut. */
  shrink?: number;
  /** Columns with a rank are dropped on a narrow terminal, lowest rank first; the others always stay. */
  drop?: number;
}

/**
 * Below this many terminal columns a table is one block a row: the columns that always stay would
 * not fit in a row any more. From it up, low-value columns are dropped and long ones cut instead, as
 * gh does: six streams in six lines, not fifty.
 */
export const STACK_BELOW = 60;

/** A count as a person writes it (`1,234`): in TSV, the digits alone. */
const GROUPED = /^\d{1,3}(,\d{3})+$/;

/**
 * cli-table3, loaded on the first boxed table: a pipe's TSV and a quiet run never pay for it (a light
 * `status`).
 */
let TableClass: typeof TableType | undefined;
function cliTable(): typeof TableType {
  TableClass ??= createRequire(import.meta.url)('cli-table3') as typeof TableType;
  return TableClass;
}

/**
 * A plain table for people (no colours in the borders, so logs and pipes stay clean). Every cell is
 * escaped and cut (escape.ts): cells often hold what the service sent. A column given as a string
 * has the defaults of Column. TSV keeps every column whatever the width: a script reads it.
 */
export function renderTable(spec: Array<string | Column>, rows: Array<Array<string | number>>, style: TableStyle = BOXED): string {
  const columns = spec.map((c) => (typeof c === 'string' ? { head: c } : c));
  const head = columns.map((c) => c.head);
  const cells = rows.map((row) => row.map((v, i) => cell(String(v), style.tsv ? Number.POSITIVE_INFINITY : (columns[i]?.max ?? CELL_MAX))));
  if (style.tsv) {
    return [head, ...cells.map((row) => row.map((v) => (GROUPED.test(v) ? v.replace(/,/g, '') : v)))].map((r) => r.join('\t')).join('\n');
  }
  // Each column's own width, measured once, then fitted to the terminal.
  const natural = head.map((h, i) => Math.max(length(h), ...cells.map((row) => length(row[i] ?? ''))));
  const fitted = style.width === undefined ? { kept: columns.map((_, i) => i), widths: natural } : layout(columns, natural, style.width);
  if (fitted === undefined) return stacked(head, cells, style.width as number);
  const { kept, widths } = fitted;
  const cut = (text: string, k: number) => cell(text, widths[k] ?? CELL_MAX);
  const table = new (cliTable())({
    head: kept.map((i, k) => cut(head[i] as string, k)),
    style: { head: [], border: [] },
    colAligns: kept.map((i) => columns[i]?.align ?? 'left'),
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const row of cells) table.push(kept.map((i, k) => cut(row[i] ?? '', k)));
  return table.toString();
}

const length = (s: string) => Array.from(s).length;

/** The columns a boxed table of `columns` columns spends on borders and padding. */
const frame = (columns: number) => 3 * columns + 1;

const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

/**
 * Which columns a table of `width` keeps, and their widths: every column whole when it fits; else
 * the cuttable ones narrowed (widest first) down to their `shrink`; when even that is too wide, the
 * lowest-ranked droppable column goes and the fit starts again. Undefined below STACK_BELOW, or when
 * the columns that always stay do not fit: the table is stacked instead.
 */
function layout(columns: Column[], natural: number[], width: number): { kept: number[]; widths: number[] } | undefined {
  if (width < STACK_BELOW) return undefined;
  let kept = columns.map((_, i) => i);
  for (;;) {
    const wants = kept.map((i) => natural[i] as number);
    const floors = kept.map((i) => Math.min(natural[i] as number, columns[i]?.shrink ?? Number.POSITIVE_INFINITY));
    const budget = width - frame(kept.length);
    if (sum(floors) <= budget) return { kept, widths: narrow(wants, floors, budget) };
    let victim: number | undefined;
    for (const i of kept) {
      const rank = columns[i]?.drop;
      // Ties: the rightmost goes first.
      if (rank !== undefined && (victim === undefined || rank <= (columns[victim]?.drop as number))) victim = i;
    }
    if (victim === undefined) return undefined;
    kept = kept.filter((i) => i !== victim);
  }
}

/** `widths` narrowed one character at a time, the widest first, never below `floors`, until they fit `budget`. */
function narrow(widths: number[], floors: number[], budget: number): number[] {
  const out = [...widths];
  let total = sum(out);
  while (total > budget) {
    let widest = -1;
    for (let k = 0; k < out.length; k++) {
      if ((out[k] as number) > (floors[k] as number) && (widest < 0 || (out[k] as number) > (out[widest] as number))) widest = k;
    }
    if (widest < 0) break;
    out[widest] = (out[widest] as number) - 1;
    total--;
  }
  return out;
}

/** Narrowest a stacked value is cut to, however narrow the terminal. */
const MIN_VALUE = 6;

/**
 * A table on a terminal too narrow for a row, one block a row: the first column as its heading,
 * then `name: value` lines, each cut to the width.
 */
function stacked(head: string[], cells: string[][], width: number): string {
  const label = Math.max(...head.slice(1).map(length));
  return cells
    .map((row) => {
      const lines = [cell(row[0] ?? '', Math.max(MIN_VALUE, width))];
      for (let i = 1; i < head.length; i++) {
        const name = `${head[i] ?? ''}:`.padEnd(label + 1);
        lines.push(`  ${name} ${cell(row[i] ?? '', Math.max(MIN_VALUE, width - label - 4))}`.trimEnd());
      }
      return lines.join('\n');
    })
    .join('\n\n');
}

/**
 * `12,345`: en-US digit grouping. Integers are grouped by hand: the first `toLocaleString` of a
 * process loads ICU's number formatting, which costs more than the rest of `status` (docs/performance.md).
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
