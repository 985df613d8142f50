/**
 * Row formats for export: CSV (RFC 4180 through csv-stringify) and NDJSON. Both are streams over
 * an iterator of rows, so memory stays flat whatever the table's size.
 */
import { Readable, Transform } from 'node:stream';
import { stringify } from 'csv-stringify';
import { parseJson, toJson } from '../core/json.js';
import { JSON_COLUMNS } from './tables.js';

type Row = Record<string, unknown>;

/** Cells a spreadsheet would run as a formula start with one of these (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** Prefixes a text cell that a spreadsheet would run as a formula with `'`. Numbers are left alone. */
export function neutralise(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/** CSV: header row, CRLF line ends (RFC 4180), UTF-8, quotes and line breaks quoted; int64 exact. */
export function csvTransform(columns: string[], opts: { raw: boolean }): Transform {
  return stringify({
    header: true,
    columns,
    record_delimiter: 'windows',
    // With a CRLF record delimiter, csv-stringify quotes only cells holding CRLF: a bare LF or CR went
    // out unquoted and split the row in Python, Excel and every other RFC 4180 reader. Any CR or LF
    // is quoted (the pattern is matched against the cell as written, after neutralise).
    quoted_match: /[\r\n]/,
    cast: {
      bigint: (v) => v.toString(),
      string: opts.raw ? (v) => v : neutralise,
    },
  });
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
