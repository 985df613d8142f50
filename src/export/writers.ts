/**
 * NDJSON export: one object per row, written a line at a time into the CSV encoder's 1 MB buffers
 * (csv.ts), so memory stays flat whatever the table's size; and the formula rule CSV export applies
 * to text cells. A line is built cell by cell: `JSON.stringify` of a whole row throws on its first
 * int64 (a bigint), and a catch-and-redo per row made NDJSON export many times slower than
 * sqlite3 -csv (docs/performance.md).
 */
import { parseJson, toJson } from '../core/json.js';
import { Encoder, isFormula } from './csv.js';
import { between } from './interrupt.js';
import type { ByteSink } from './sink.js';
import { JSON_COLUMNS } from './tables.js';

/** Prefixes a text cell that a spreadsheet would run as a formula with `'`. Numbers are left alone. */
export function neutralise(value: string): string {
  return isFormula(value) ? `'${value}` : value;
}

/**
 * One cell as JSON: a JSON-text column embedded as a JSON value, int64 exact, and a BLOB (SQLite's,
 * or PostgreSQL's bytea: only hand-edited data or an analyst's own columns hold one) as the base64 of
 * its bytes, in any column: exact whatever the bytes, and what warehouses load into a BYTES column.
 * Before, it came out as Node's internal `{"type":"Buffer","data":[…]}`.
 */
function jsonCell(json: boolean, v: unknown): string {
  if (typeof v === 'string') return json ? toJson(parseJsonOr(v)) : JSON.stringify(v);
  if (typeof v === 'bigint') return String(v);
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return `"${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')}"`;
  return toJson(v);
}

/** The NDJSON line of a row given as an array of cells, the columns named in `columns`. */
export function ndjsonLine(columns: readonly string[], row: readonly unknown[]): string {
  let line = '{';
  for (let i = 0; i < columns.length; i++) {
    const key = columns[i] as string;
    line += `${i === 0 ? '' : ','}${JSON.stringify(key)}:${jsonCell(JSON_COLUMNS.has(key), row[i])}`;
  }
  return `${line}}\n`;
}

/**
 * Writes every row (arrays of cells) to `sink` as NDJSON, waiting for it to drain; returns the number
 * of rows. Stops between two chunks once `signal` is aborted.
 */
export async function writeNdjson(
  columns: readonly string[],
  rows: Iterable<unknown[]> | AsyncIterable<unknown[]>,
  sink: ByteSink,
  signal?: AbortSignal,
): Promise<number> {
  const enc = new Encoder(sink);
  let n = 0;
  /** Adds a row's line; true when a chunk is full. */
  const push = (row: unknown[]): boolean => {
    enc.line(ndjsonLine(columns, row));
    n++;
    return enc.full;
  };
  const handOn = async () => {
    if (!enc.flush()) await sink.drain();
    await between(signal);
  };
  // Rows from SQLite come synchronously (no await per row); from PostgreSQL, asynchronously.
  if (Symbol.asyncIterator in rows) {
    for await (const row of rows) if (push(row)) await handOn();
  } else {
    for (const row of rows) if (push(row)) await handOn();
  }
  if (!enc.flush()) await sink.drain();
  return n;
}

function parseJsonOr(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return text;
  }
}
