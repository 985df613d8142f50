/**
 * CSV lines from bytes SQLite joins: one query per batch of rows hands back the batch's rows as one
 * blob (store/sqlite/export-sql.ts batchQuery: U+001F between cells, U+001E between rows, `typeof()` before each
 * cell of a column without TEXT affinity), which is encoded byte by byte straight into the encoder's
 * buffer. No JavaScript value is made per row or per cell: better-sqlite3 makes one Buffer per batch,
 * where a row's cells (or even its one text) cost a V8 object each and a UTF-8 decode and encode
 * (docs/performance.md).
 *
 * The bytes are csvLine's for the same rows, byte for byte. A batch is read again as cells, and written
 * by csvLine, when its bytes are not exactly its rows: a cell holding a separator, a blob or an
 * infinity in a typed cell, bytes that are not UTF-8 (a row's cells would decode them with U+FFFD).
 */
import { isUtf8 } from 'node:buffer';
import { errorCode } from '../errors.js';
import type { RowRanges } from '../store/port.js';
import { csvLine, type Encoded, type Encoder, encodeRows } from './csv.js';

/** U+001F (unit separator) between a row's cells, U+001E (record separator) between rows. */
export const CELL = 0x1f;
export const ROW = 0x1e;
/**
 * U+001D (group separator) alone: an empty text in a TEXT column, `""` in CSV, where NULL is nothing.
 * No text cell of a batch starts with it otherwise (export-sql.ts batchQuery breaks such a batch).
 */
export const EMPTY = 0x1d;

const QUOTE = 0x22;
const COMMA = 0x2c;
/** 1: makes a text cell quoted (quote, comma, CR, LF); 2: a separator, which ends a cell. */
const CLASS = new Uint8Array(256);
for (const c of [QUOTE, COMMA, 0x0d, 0x0a]) CLASS[c] = 1;
CLASS[CELL] = 2;
CLASS[ROW] = 2;
/** A first byte that makes a text cell a formula to a spreadsheet (csv.ts isFormula): = + - @ tab CR. */
const FORMULA = new Uint8Array(256);
for (const c of [0x3d, 0x2b, 0x2d, 0x40, 0x09, 0x0d]) FORMULA[c] = 1;

/** The typeof() words a typed cell starts with (a blob's is not among them: read again as cells). */
const INTEGER = Buffer.from('integer');
const REAL = Buffer.from('real');
const TEXT = Buffer.from('text');
const NULL = Buffer.from('null');

function startsWith(src: Uint8Array, p: number, word: Uint8Array): boolean {
  if (p + word.length > src.length) return false;
  for (let i = 0; i < word.length; i++) if (src[p + i] !== word[i]) return false;
  return true;
}

/** Bytes the lines of a batch can take at most: every byte doubled (quotes), and per cell a `'`, two quotes, a comma, and a real's longest form. */
export function maxLines(bytes: number, rows: number, cells: number): number {
  return 2 * bytes + rows * (cells * 28 + 2);
}

/**
 * Writes the CSV lines of a batch's bytes (`rows` rows of `typed.length` cells) into `out` from `o`
 * (room for maxLines() bytes); returns where they end, or -1 when the bytes are not exactly that: every
 * separator byte in them must end a cell where the structure puts one, so a separator inside a cell
 * makes the count of rows or cells wrong. Also -1 for a blob or an infinity in a typed cell. The caller
 * checks the bytes are UTF-8.
 */
export function encodeBatch(src: Uint8Array, rows: number, typed: readonly boolean[], raw: boolean, out: Buffer, o: number): number {
  const end = src.length;
  const cells = typed.length;
  let p = 0;
  for (let row = 0; row < rows; row++) {
    for (let i = 0; i < cells; i++) {
      if (i > 0) out[o++] = COMMA;
      let text = !typed[i];
      if (!text) {
        if (startsWith(src, p, INTEGER)) {
          // Digits and a sign, as JavaScript writes an int64.
          p += INTEGER.length;
          while (p < end && CLASS[src[p] as number] !== 2) out[o++] = src[p++] as number;
        } else if (startsWith(src, p, REAL)) {
          p += REAL.length;
          const start = p;
          while (p < end && CLASS[src[p] as number] !== 2) p++;
          o = real(src, start, p, out, o);
          if (o < 0) return -1;
        } else if (startsWith(src, p, NULL)) p += NULL.length;
        else if (startsWith(src, p, TEXT)) {
          p += TEXT.length;
          text = true;
        } else return -1;
      }
      if (text && !typed[i] && src[p] === EMPTY) {
        out[o++] = QUOTE;
        out[o++] = QUOTE;
        p++;
      } else if (text && typed[i] && (p === end || CLASS[src[p] as number] === 2)) {
        // A typed cell whose typeof() is text, and the text empty.
        out[o++] = QUOTE;
        out[o++] = QUOTE;
      } else if (text) {
        const start = o;
        let quoted = false;
        if (!raw && p < end && FORMULA[src[p] as number] === 1) out[o++] = 0x27;
        for (; p < end; p++) {
          const b = src[p] as number;
          const kind = CLASS[b];
          if (kind === 0) {
            out[o++] = b;
            continue;
          }
          if (kind === 2) break;
          if (!quoted) {
            // The first quote, comma or line break: what is written so far moves right by one.
            out.copyWithin(start + 1, start, o);
            out[start] = QUOTE;
            o++;
            quoted = true;
          }
          if (b === QUOTE) out[o++] = QUOTE;
          out[o++] = b;
        }
        if (quoted) out[o++] = QUOTE;
      }
      // The cell ends where the structure says: a cell separator, a row separator, or the batch's end.
      const last = i === cells - 1;
      if (p === end) {
        if (!last || row !== rows - 1) return -1;
      } else if (src[p] !== (last ? ROW : CELL)) return -1;
      else p++;
    }
    out[o++] = 0x0d;
    out[o++] = 0x0a;
  }
  return p === end ? o : -1;
}

/**
 * Writes a real cell (SQLite's text of it, src[from, to)) as JavaScript writes the number; returns the
 * new end, or -1 for an infinity. SQLite writes 15 significant digits when they read back
 * to the same double, else 17: up to 15 digits without an exponent, its digits are JavaScript's
 * shortest ones (no two 15-digit decimals lie within one double), and only `.0` of a whole number
 * differs. Anything else goes through Number and String.
 */
function real(src: Uint8Array, from: number, to: number, out: Buffer, o: number): number {
  let digits = 0;
  let plain = true;
  for (let p = from; p < to; p++) {
    const b = src[p] as number;
    if (b >= 0x30 && b <= 0x39) digits++;
    else if (b !== 0x2e && b !== 0x2d) plain = false;
  }
  if (!plain || digits > 15) {
    const n = Number(Buffer.from(src.buffer, src.byteOffset + from, to - from).toString('latin1'));
    return Number.isFinite(n) ? o + out.write(String(n), o, 'latin1') : -1;
  }
  let stop = to;
  // A whole number: JavaScript writes no `.0`, and 0 for negative zero.
  if (to - from >= 3 && src[to - 1] === 0x30 && src[to - 2] === 0x2e) {
    stop -= 2;
    if (stop - from === 2 && src[from] === 0x2d && src[from + 1] === 0x30) return o + out.write('0', o, 'latin1');
  }
  for (let p = from; p < stop; p++) out[o++] = src[p] as number;
  return o;
}

/**
 * Rows in the first batch; later batches aim at BATCH_BYTES from the last batch's bytes per row (at
 * most twice the last batch's rows). One, because nothing is known of the rows yet: 64 rows of up to
 * 40 MB (a hostile run) made a 155 MB first batch, read and encoded at once, with no chance for a
 * signal in between for 12 s. The bench's table reaches its size (~470 rows) after nine small queries.
 */
const FIRST_ROWS = 1;
const BATCH_BYTES = 128 * 1024;
const MAX_ROWS = 4096;

/** Encodes the rows in [lo, hi) batch by batch, a chunk at a time (each step stops once a chunk is full). */
class Batches {
  private from: bigint;
  private limit = FIRST_ROWS;

  constructor(
    private readonly reader: RowRanges,
    lo: bigint,
    private readonly hi: bigint,
    private readonly typed: readonly boolean[],
    private readonly raw: boolean,
  ) {
    this.from = lo;
  }

  step(enc: Encoder): Encoded {
    let rows = 0;
    let last: bigint | undefined;
    while (this.from < this.hi) {
      const batch = this.read();
      if (batch === undefined) {
        // One row whose joined text SQLite cannot make (over its 1 GB limit): from its cells. The
        // iterator is closed at once: the connection runs no other query while one is open.
        const cells = this.reader.rows(this.from, this.hi);
        const next = cells.next();
        cells.return?.();
        if (next.done) {
          this.from = this.hi;
          break;
        }
        const row = next.value;
        enc.line(csvLine(row, this.raw, row.length - 1));
        rows++;
        last = row[row.length - 1] as bigint;
        this.from = last + 1n;
      } else if (batch.bytes === null || batch.last === null) {
        // No row left in the range.
        this.from = this.hi;
        break;
      } else {
        const src = batch.bytes;
        // Room for the lines only for bytes they can come from (a batch that is not UTF-8 is read again).
        let end = -1;
        if (isUtf8(src)) {
          const out = enc.reserve(maxLines(src.length, batch.rows, this.typed.length));
          end = encodeBatch(src, batch.rows, this.typed, this.raw, out, enc.offset);
        }
        if (end >= 0) enc.advance(end);
        else for (const row of this.reader.rows(this.from, batch.last + 1n)) enc.line(csvLine(row, this.raw, row.length - 1));
        rows += batch.rows;
        last = batch.last;
        // Past the range's end when the batch held its last row (from then equals hi: the largest
        // rowid, 2^63 - 1, is never bound plus one).
        this.from = batch.rows < this.limit ? this.hi : batch.last + 1n;
        this.learn(src.length, batch.rows);
      }
      if (enc.full) break;
    }
    return { rows, done: this.from >= this.hi, last };
  }

  /**
   * The next batch; a batch too big for SQLite (SQLITE_TOOBIG: its joined rows pass 1 GB) is read
   * again as one row (each try costs SQLite up to 1 GB of work: halving took four tries to fit 150 MB
   * rows), and undefined when even one row is too big.
   */
  private read(): ReturnType<RowRanges['batch']> | undefined {
    for (;;) {
      try {
        return this.reader.batch(this.from, this.hi - 1n, this.limit);
      } catch (err) {
        if (errorCode(err) !== 'SQLITE_TOOBIG') throw err;
        if (this.limit === 1) return undefined;
        this.limit = 1;
      }
    }
  }

  /**
   * Sizes the next batch from the last one's bytes per row: at most twice as many rows as the last, and
   * as few as one when rows are big (a batch's blob and its lines are in memory at once).
   */
  private learn(bytes: number, rows: number): void {
    const ideal = Math.floor((BATCH_BYTES * rows) / Math.max(bytes, 1));
    const capped = Math.min(ideal, this.limit * 2, MAX_ROWS);
    this.limit = capped < 1 ? 1 : capped;
  }
}

/** Encodes a range's rows a chunk at a time: batch by batch when the reader has the batch query, else from their cells. */
export function rangeEncoder(
  reader: RowRanges,
  lo: bigint,
  hi: bigint,
  job: { batch?: { typed: readonly boolean[] } | undefined; raw: boolean },
): { step(enc: Encoder): Encoded; close(): void } {
  if (job.batch !== undefined && reader.hasBatches) {
    const batches = new Batches(reader, lo, hi, job.batch.typed, job.raw);
    return { step: (enc) => batches.step(enc), close: () => {} };
  }
  const rows = reader.rows(lo, hi);
  return { step: (enc) => encodeRows(rows, enc, job.raw, 1), close: () => rows.return?.() };
}
