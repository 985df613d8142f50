/**
 * CSV lines from one text per row (export/tables.ts textQuery): SQLite joins a row's cells into one
 * text, and better-sqlite3 hands back one string per row instead of an array of cells. On Node 20 it
 * builds each array through V8's slow API path, a cell at a time (its Node 22 builds do not: see
 * ROWS_AS_TEXT), and iterate() adds an object per row the same way; strings read BATCH at a time with
 * all() cost 20-23% less CPU to read and encode the bench's table, and the whole export process 9-10%
 * less (paired runs). The bytes are csvLine's for the same row, cell for cell; a row whose text cannot
 * be split safely (a cell holding U+001F, a blob or an infinity in a number column) is read again as
 * cells and written by csvLine.
 */
import type { RangeReader } from '../store/snapshot.js';
import { csvLine, type Encoded, type Encoder, encodeRows, textCell } from './csv.js';
import type { TextQuery } from './tables.js';

/**
 * Whether rows are read as texts: where better-sqlite3 is built for Node 20 (ABI 115), whose V8 API
 * it uses a property at a time. Its builds for Node 22 and later (ABI 127 on) make each row's array at
 * once, and there cells were 5-10% faster than texts (Node 22.23, 9 paired rounds).
 */
export const ROWS_AS_TEXT = Number(process.versions.modules) < 127;

/** U+001F (unit separator) between the cells of a row's text. */
export const CELL_SEPARATOR = '\u001f';

/** A quote, comma or line break: what makes a cell quoted. */
const SPECIAL = /[",\r\n]/g;

/** The index of the first quote, comma or line break at or after `from`, or the text's length. */
function nextSpecial(text: string, from: number): number {
  SPECIAL.lastIndex = from;
  return SPECIAL.test(text) ? SPECIAL.lastIndex - 1 : text.length;
}

/** Characters of the typeof() word before a typed cell's value: integer, real, text, null (blobs are read again). */
const TYPE_LENGTH: Record<number, number> = { 105: 7, 114: 4, 116: 4, 110: 4 };

/**
 * The CSV line (with its CRLF) of a row's text, `typed` telling which cells start with their typeof();
 * undefined when the text has more separators than cells or a cell this cannot write as csvLine would.
 */
export function textLine(text: string, typed: readonly boolean[], raw: boolean): string | undefined {
  // Where the next quote, comma or line break is: a cell ending before it needs no quoting, and is not
  // searched on its own (most rows have one such cell at most, a rationale or a name).
  let special = nextSpecial(text, 0);
  let line = '';
  let start = 0;
  for (let i = 0; i < typed.length; i++) {
    const end = text.indexOf(CELL_SEPARATOR, start);
    if (end < 0) return undefined;
    if (i > 0) line += ',';
    if (typed[i]) {
      const kind = text.charCodeAt(start);
      const skip = TYPE_LENGTH[kind];
      if (skip === undefined) return undefined;
      const value = text.slice(start + skip, end);
      if (kind === 105) line += value;
      else if (kind === 114) {
        // SQLite writes a real with the digits that read back to it exactly; JavaScript's shortest form.
        const n = Number(value);
        if (!Number.isFinite(n)) return undefined;
        line += String(n);
      } else if (kind === 116) line += textCell(value, raw, false);
    } else if (end > start) {
      if (special < start) special = nextSpecial(text, start);
      line += textCell(text.slice(start, end), raw, special >= end);
    }
    start = end + 1;
  }
  // What is left is the rowid, unless a cell held a separator.
  if (text.indexOf(CELL_SEPARATOR, start) >= 0) return undefined;
  return `${line}\r\n`;
}

/** The rowid at the end of a row's text. */
export function rowidOf(text: string): bigint {
  return BigInt(text.slice(text.lastIndexOf(CELL_SEPARATOR) + 1));
}

/** Rows read per call (the text query's LIMIT): 256 was no faster, and raised a million-row export's peak RSS from 126 to 144 MB. */
export const BATCH = 64;

/** How a range's rows are read: texts from `from` on (at most BATCH), and one row's cells by its rowid. */
export interface TextReads {
  texts(from: bigint, hi: bigint, limit: number): string[];
  cells(rowid: bigint): unknown[] | undefined;
}

/**
 * The CSV lines of the rows in [lo, hi), in rowid order, each row's cells read again where its text
 * cannot be split; `last` is the rowid of the last row handed back.
 */
export class TextRows {
  private batch: string[] = [];
  private index = 0;
  private more = true;
  /** The text of the last row handed back. */
  private current = '';

  constructor(
    private readonly reads: TextReads,
    private from: bigint,
    private readonly hi: bigint,
    private readonly typed: readonly boolean[],
    private readonly raw: boolean,
  ) {}

  /** The next line, or undefined once the range is done. */
  next(): string | undefined {
    if (this.index >= this.batch.length) {
      if (!this.more) return undefined;
      this.batch = this.reads.texts(this.from, this.hi, BATCH);
      this.index = 0;
      const last = this.batch[this.batch.length - 1];
      if (last === undefined || this.batch.length < BATCH) this.more = false;
      else {
        this.from = rowidOf(last) + 1n;
        // Past the largest rowid there is nothing to read (nor a bound SQLite takes).
        if (this.from >= this.hi) this.more = false;
      }
      if (last === undefined) return undefined;
    }
    const text = this.batch[this.index++] as string;
    this.current = text;
    const line = textLine(text, this.typed, this.raw);
    if (line !== undefined) return line;
    const cells = this.reads.cells(rowidOf(text));
    if (cells === undefined) throw new Error(`export: row ${rowidOf(text)} vanished from its own snapshot`);
    return csvLine(cells, this.raw, cells.length - 1);
  }

  /** The rowid of the last line handed back. */
  get last(): bigint {
    return rowidOf(this.current);
  }
}

/** As csv.ts encodeRows, for lines: encodes until they run out or a chunk is full. */
export function encodeLines(rows: TextRows, enc: Encoder): Encoded {
  let n = 0;
  for (;;) {
    const line = rows.next();
    if (line === undefined) return { rows: n, done: true, last: n > 0 ? rows.last : undefined };
    enc.line(line);
    n++;
    if (enc.full) return { rows: n, done: false, last: rows.last };
  }
}

/** Encodes a range's rows a chunk at a time: from their texts when the reader has them, else from their cells. */
export function rangeEncoder(
  reader: RangeReader,
  lo: bigint,
  hi: bigint,
  job: { text?: TextQuery | undefined; raw: boolean },
): { step(enc: Encoder): Encoded; close(): void } {
  if (job.text !== undefined && reader.hasTexts) {
    const lines = new TextRows(reader, lo, hi, job.text.typed, job.raw);
    return { step: (enc) => encodeLines(lines, enc), close: () => {} };
  }
  const rows = reader.rows(lo, hi);
  return { step: (enc) => encodeRows(rows, enc, job.raw, 1), close: () => rows.return?.() };
}
