import Table from 'cli-table3';
import { CELL_MAX, cell } from './escape.js';

/**
 * A plain table for people (no colours in the borders, so logs and pipes stay clean). Every cell is
 * escaped and cut (escape.ts): cells often hold what the service sent. `max` widens a column's cut.
 */
export function renderTable(
  head: string[],
  rows: Array<Array<string | number>>,
  align: Array<'left' | 'right'> = [],
  max: Array<number | undefined> = [],
): string {
  const table = new Table({
    head,
    style: { head: [], border: [] },
    colAligns: align,
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const row of rows) table.push(row.map((v, i) => cell(String(v), max[i] ?? CELL_MAX)));
  return table.toString();
}

export function formatCount(n: number | bigint): string {
  return n.toLocaleString('en-US');
}

export function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** `1 stream`, `2 streams`, `1,000 requests`. */
export function plural(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}
