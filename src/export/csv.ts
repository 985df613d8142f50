/**
 * CSV export (RFC 4180): a header row, CRLF line ends, UTF-8 without a BOM; a cell holding a comma, a
 * quote or any line break (CRLF, bare LF, bare CR) is quoted with its quotes doubled; int64 exact;
 * NULL is an empty cell and the empty text `""`.
 * Hand-written over raw row arrays, encoded a line at a time into ~1 MB buffers that go to the sink whole:
 * csv-stringify's per-cell machinery (an object per row, casts, option checks, a stream step per
 * record) cost 3-4x the query itself.
 */

import { between } from './interrupt.js';
import { type ByteSink, CHUNK } from './sink.js';

const NEEDS_QUOTES = /[",\r\n]/;
const QUOTE = /"/g;

/** A text cell a spreadsheet would run as a formula starts with `=`, `+`, `-`, `@`, tab or CR (OWASP "CSV injection"). */
export function isFormula(s: string): boolean {
  const c = s.charCodeAt(0);
  return c === 61 || c === 43 || c === 45 || c === 64 || c === 9 || c === 13;
}

/**
 * A text cell as CSV: neutralised with a leading `'` (unless raw), then quoted if it must be. The
 * empty text is `""`, so that it differs from NULL, which is nothing (as PostgreSQL's COPY … CSV).
 */
export function textCell(value: string, raw: boolean): string {
  if (value === '') return '""';
  const s = !raw && isFormula(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(s) ? `"${s.replace(QUOTE, '""')}"` : s;
}

/** Anything else: numbers as JavaScript writes them, int64 (bigint) with every digit, null empty. */
function otherCell(value: unknown, raw: boolean): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (value instanceof Uint8Array) return textCell(Buffer.from(value).toString('utf8'), raw);
  return textCell(String(value), raw);
}

/** A buffer of twice CHUNK bytes: a chunk, and room for the line that fills it. */
const newBuffer = (): Buffer => Buffer.allocUnsafe(CHUNK * 2);

/**
 * Encodes rows into buffers of about CHUNK bytes and hands each full one to the sink. A buffer the sink
 * is done with comes back to be filled again (a file's at once, a stream's once written), so a long
 * export allocates a few buffers, not one per chunk.
 */
export class Encoder {
  private readonly free: Buffer[] = [];
  private buf: Buffer;
  private off = 0;
  /** Bytes of lines too big for a buffer, handed to the sink on their own since the last flush(). */
  private passed = 0;
  /** Whether the sink said to wait (write() returned false) for such a line. */
  private wait = false;
  /** Bytes handed to the sink so far. */
  written = 0;

  constructor(private readonly sink: ByteSink) {
    this.buf = newBuffer();
  }

  /**
   * Appends one line: built as a string and encoded with one call per row (cheaper than a native
   * call per cell: docs/performance.md); a line bigger than the buffer goes out on its own.
   */
  line(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (this.off + s.length * 3 > this.buf.length) {
      this.flush();
      if (s.length * 3 > this.buf.length) {
        const bytes = Buffer.from(s, 'utf8');
        this.written += bytes.length;
        this.passed += bytes.length;
        if (!this.sink.write(bytes)) this.wait = true;
        return;
      }
    }
    this.off += this.buf.write(s, this.off);
  }

  /**
   * The buffer to write at least `n` bytes into directly, from `offset` (flushed first when it has not
   * the room; a one-off buffer when `n` is more than a buffer holds); advance() past what was written.
   */
  reserve(n: number): Buffer {
    if (this.off + n > this.buf.length) {
      this.flush();
      if (n > this.buf.length) this.buf = Buffer.allocUnsafe(n);
    }
    return this.buf;
  }

  /** Where the next byte goes in the buffer reserve() returns. */
  get offset(): number {
    return this.off;
  }

  /** Takes the bytes written directly into the buffer up to `to`. */
  advance(to: number): void {
    this.off = to;
  }

  /**
   * True when a chunk is full and should go out, or as much went to the sink in big lines of their own:
   * a caller's turn (drain, a signal) comes every chunk, whatever the size of the rows.
   */
  get full(): boolean {
    return this.off + this.passed >= CHUNK;
  }

  /**
   * Hands the filled part to the sink (which keeps it: a fresh buffer follows). Returns write()'s
   * answer, false too when the sink asked to wait for a big line written since the last flush.
   */
  flush(): boolean {
    const wait = this.wait;
    this.passed = 0;
    this.wait = false;
    if (this.off === 0) return !wait;
    const buf = this.buf;
    const ok = this.sink.write(buf.subarray(0, this.off), () => this.free.push(buf)) && !wait;
    this.written += this.off;
    this.buf = this.free.pop() ?? newBuffer();
    this.off = 0;
    return ok;
  }
}

/** One row as a CSV line with its CRLF: its first `cells` cells (all by default). */
export function csvLine(row: readonly unknown[], raw: boolean, cells = row.length): string {
  let line = '';
  for (let i = 0; i < cells; i++) {
    if (i > 0) line += ',';
    const v = row[i];
    if (typeof v === 'string') line += textCell(v, raw);
    else if (v !== null) line += otherCell(v, raw);
  }
  return `${line}\r\n`;
}

/** Where encodeRows stopped: rows encoded, and whether the rows ran out. */
export interface Encoded {
  rows: number;
  done: boolean;
  /** The last cell of the last row encoded (the range readers' rowid). */
  last: unknown;
}

/**
 * Encodes rows (all cells but the last `skip`) until they run out or a chunk is full, so that the
 * caller can hand it on (and wait for the sink) before the next call.
 */
export function encodeRows(rows: Iterator<unknown[]>, enc: Encoder, raw: boolean, skip = 0): Encoded {
  let n = 0;
  let last: unknown;
  for (;;) {
    const next = rows.next();
    if (next.done) return { rows: n, done: true, last };
    const row = next.value;
    enc.line(csvLine(row, raw, row.length - skip));
    if (skip > 0) last = row[row.length - 1];
    n++;
    if (enc.full) return { rows: n, done: false, last };
  }
}

/**
 * Writes the header and every row to `sink`, waiting for it to drain; returns the number of rows.
 * Stops between two chunks once `opts.signal` is aborted. Rows from SQLite come synchronously (no
 * await per row); from PostgreSQL, asynchronously.
 */
export async function writeCsv(
  columns: readonly string[],
  rows: Iterable<unknown[]> | AsyncIterable<unknown[]>,
  sink: ByteSink,
  opts: { raw: boolean; signal?: AbortSignal | undefined },
): Promise<number> {
  const enc = new Encoder(sink);
  // Column names are ours, never neutralised.
  enc.line(csvLine(columns, true));
  let n = 0;
  if (Symbol.asyncIterator in rows) {
    for await (const row of rows) {
      enc.line(csvLine(row, opts.raw));
      n++;
      if (enc.full) {
        if (!enc.flush()) await sink.drain();
        await between(opts.signal);
      }
    }
    if (!enc.flush()) await sink.drain();
    return n;
  }
  const it = rows[Symbol.iterator]();
  for (;;) {
    const step = encodeRows(it, enc, opts.raw);
    n += step.rows;
    if (!enc.flush()) await sink.drain();
    if (step.done) return n;
    await between(opts.signal);
  }
}
