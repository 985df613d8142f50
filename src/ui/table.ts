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
  /**
   * Shown on a terminal only when some cell says something: a column whose every cell is empty or
   * zero (`id conflicts` of a healthy mirror) gives its width to the others. TSV keeps it.
   */
  optional?: boolean;
  /**
   * Never cut, however long (a campaign's name, which `--campaign` takes): a table that cannot keep
   * it whole beside the columns that always stay is stacked instead.
   */
  whole?: boolean;
  /**
   * An id that may be shortened to a prefix, as git shortens hashes: whole when there is room, else
   * cut without an ellipsis to the shortest prefix of at least this many characters that tells the
   * column's ids apart (what `--campaign` accepts).
   */
  prefix?: number;
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
  const given = spec.map((c) => (typeof c === 'string' ? { head: c } : c));
  const limit = (c: Column | undefined) =>
    style.tsv || c?.whole || c?.prefix !== undefined ? Number.POSITIVE_INFINITY : (c?.max ?? CELL_MAX);
  const allCells = rows.map((row) => row.map((v, i) => cell(String(v), limit(given[i]))));
  if (style.tsv) {
    return [given.map((c) => c.head), ...allCells.map((row) => row.map((v) => (GROUPED.test(v) ? v.replace(/,/g, '') : v)))]
      .map((r) => r.join('\t'))
      .join('\n');
  }
  // On a terminal, a column with nothing to say is left out before anything is cut.
  const shown = given.map((_, i) => i).filter((i) => !(given[i]?.optional && allCells.every((row) => BLANK.test(row[i] ?? ''))));
  const columns = shown.map((i) => given[i] as Column);
  const cells = allCells.map((row) => shown.map((i) => row[i] ?? ''));
  const head = columns.map((c) => c.head);
  // Each column's own width, measured once, then fitted to the terminal.
  const natural = head.map((h, i) => Math.max(length(h), ...cells.map((row) => length(row[i] ?? ''))));
  const floors = columns.map((c, i) => floorOf(c, natural[i] as number, cells, i));
  const fitted =
    style.width === undefined ? { kept: columns.map((_, i) => i), widths: natural } : layout(columns, natural, floors, style.width);
  if (fitted === undefined) return stacked(columns, cells, style.width as number);
  const { kept, widths } = fitted;
  // An id is cut to its prefix without an ellipsis: what is shown is still a selector.
  const cut = (text: string, k: number) => {
    const width = widths[k] ?? CELL_MAX;
    const column = columns[kept[k] as number];
    return column?.prefix !== undefined && length(text) > width ? Array.from(text).slice(0, width).join('') : cell(text, width);
  };
  const table = new (cliTable())({
    head: kept.map((i, k) => cell(head[i] as string, widths[k] ?? CELL_MAX)),
    style: { head: [], border: [] },
    colAligns: kept.map((i) => columns[i]?.align ?? 'left'),
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const row of cells) table.push(kept.map((i, k) => cut(row[i] ?? '', k)));
  return table.toString();
}

const length = (s: string) => Array.from(s).length;

/** A cell that says nothing: empty, or a zero count. */
const BLANK = /^(0|0\.0+)?$/;

/**
 * The narrowest a column may be: an id its shortest telling prefix, a cuttable column its `shrink`,
 * any other (a name) its whole width.
 */
function floorOf(column: Column, natural: number, cells: string[][], i: number): number {
  if (column.prefix !== undefined)
    return Math.min(
      natural,
      Math.max(
        length(column.head),
        uniquePrefix(
          cells.map((row) => row[i] ?? ''),
          column.prefix,
        ),
      ),
    );
  return Math.min(natural, column.shrink ?? Number.POSITIVE_INFINITY);
}

/** The shortest length, at least `min`, at which no two of `values` share a prefix (equal values aside). */
export function uniquePrefix(values: readonly string[], min: number): number {
  const distinct = [...new Set(values)].sort();
  let n = min;
  // Sorted, the longest common prefix of any pair is that of two neighbours.
  for (let k = 1; k < distinct.length; k++) {
    const a = distinct[k - 1] as string;
    const b = distinct[k] as string;
    let common = 0;
    while (common < a.length && common < b.length && a[common] === b[common]) common++;
    n = Math.max(n, common + 1);
  }
  return n;
}

/** The columns a boxed table of `columns` columns spends on borders and padding. */
const frame = (columns: number) => 3 * columns + 1;

const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

/**
 * Which columns a table of `width` keeps, and their widths: every column whole when it fits; else
 * the cuttable ones narrowed (widest first) down to their `shrink`; when even that is too wide, the
 * lowest-ranked droppable column goes and the fit starts again. Undefined below STACK_BELOW, or when
 * the columns that always stay do not fit: the table is stacked instead.
 */
function layout(
  columns: Column[],
  natural: number[],
  floorOfColumn: number[],
  width: number,
): { kept: number[]; widths: number[] } | undefined {
  if (width < STACK_BELOW) return undefined;
  let kept = columns.map((_, i) => i);
  for (;;) {
    const wants = kept.map((i) => natural[i] as number);
    const floors = kept.map((i) => floorOfColumn[i] as number);
    const budget = width - frame(kept.length);
    if (sum(floors) <= budget) {
      // An id that cannot be whole goes straight to its prefix: a hash cut at a random length tells nothing more.
      const start =
        sum(wants) <= budget ? wants : wants.map((w, k) => (columns[kept[k] as number]?.prefix !== undefined ? (floors[k] as number) : w));
      return { kept, widths: narrow(start, floors, budget) };
    }
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
 * then `name: value` lines, each cut to the width; a `whole` value (a name) is not cut, the terminal
 * wraps it.
 */
function stacked(columns: Column[], cells: string[][], width: number): string {
  const head = columns.map((c) => c.head);
  const label = Math.max(...head.slice(1).map(length));
  const shownCell = (text: string, i: number, room: number) => (columns[i]?.whole ? text : cell(text, Math.max(MIN_VALUE, room)));
  return cells
    .map((row) => {
      const lines = [shownCell(row[0] ?? '', 0, width)];
      for (let i = 1; i < head.length; i++) {
        const name = `${head[i] ?? ''}:`.padEnd(label + 1);
        lines.push(`  ${name} ${shownCell(row[i] ?? '', i, width - label - 4)}`.trimEnd());
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
