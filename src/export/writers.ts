/**
 * NDJSON export, a stream over an iterator of rows so memory stays flat whatever the table's size,
 * and the formula rule CSV export applies to text cells (csv.ts).
 */
import { Readable, Transform } from 'node:stream';
import { parseJson, toJson } from '../core/json.js';
import { isFormula } from './csv.js';
import { JSON_COLUMNS } from './tables.js';

type Row = Record<string, unknown>;

/** Prefixes a text cell that a spreadsheet would run as a formula with `'`. Numbers are left alone. */
export function neutralise(value: string): string {
  return isFormula(value) ? `'${value}` : value;
}

/** NDJSON: one object per row; JSON-text columns embedded as JSON values, int64 exact. */
export function ndjsonTransform(): Transform {
  return new Transform({
    writableObjectMode: true,
    transform(row: Row, _enc, done) {
      const out: Row = {};
      for (const key in row) {
        const v = row[key];
        out[key] = JSON_COLUMNS.has(key) && typeof v === 'string' ? parseJsonOr(v) : v;
      }
      done(null, `${toJson(out)}\n`);
    },
  });
}

function parseJsonOr(text: string): unknown {
  try {
    return parseJson(text);
  } catch {
    return text;
  }
}

/** A readable object stream over a row iterator. */
export function rowStream(rows: Iterable<Row>): Readable {
  return Readable.from(rows, { objectMode: true, highWaterMark: 256 });
}
