/**
 * A JSON body parsed from its bytes, record by record: the same value as
 * `parseJson(body.toString('utf8'))`, and the same error when the body is not JSON.
 *
 * Why: V8 puts a string of more than ~128 KB (64K characters once one of them is not Latin-1, as an
 * accented name makes it) in its large-object space, which maps fresh memory for every such string
 * and unmaps it after: decoding a large page into one string costs more than JSON.parse of it
 * (docs/performance.md), and a pull reads hundreds of such pages. So a large body whose top level
 * is an array, or an object with one `data` array (every page shape of the service), is cut at its
 * records: each record's bytes are decoded and parsed alone, and the envelope around them apart.
 *
 * The cut is exact, not a guess: a scan of the bytes tracks strings (with their escapes) and depth,
 * and cuts only at the array's own commas, outside any string. Every part is then parsed by
 * JSON.parse, so a body the scan misreads cannot be accepted wrongly: the parts are each valid JSON
 * and the envelope with an empty array is valid JSON, so the whole is too, with the same value. An
 * ASCII byte is never part of a multi-byte UTF-8 sequence, so decoding the parts apart gives the
 * same characters as decoding the whole, invalid sequences included. Anything else (a body too small
 * to gain, another shape, a second `data` key, a key with escapes at the envelope's level, a part
 * that is not JSON, a number that needs the lossless parser, records of a few bytes each) is parsed
 * whole, as before. A body is at most the client's 64 MB cap, far below V8's longest string, so a
 * body too long to decode whole cannot reach here.
 */
import { isAscii } from 'node:buffer';
import { parseJson, parsePlain } from './json.js';

/**
 * From these sizes a body's text would be a large object: past 131,056 one-byte characters, or
 * 65,528 two-byte ones (V8's 128 KB regular-object limit, less a string's header). Below them one
 * string is faster than a hundred.
 */
const ASCII_FROM = 131_000;
const TWO_BYTE_FROM = 65_000;

/**
 * Records smaller than this on average are parsed whole: each part costs a decode and a JSON.parse
 * call of its own, so a hostile page of tiny records would cost several times its whole parse cut
 * up, while the service's smallest records (role OVERALL) are ~440 bytes.
 */
const MIN_BYTES_PER_RECORD = 256;
// Tried and dropped: runs of records up to 64 kB parsed as one array each (a few JSON.parse calls a
// page instead of a hundred) were no faster: the cost over JSON.parse of a given string is the scan,
// the decoding and the cursor check, not the calls.

/**
 * Whether a body's text would be two-byte: it holds a character past U+00FF (lead byte C4 and up),
 * or bytes F5-FF, which decode to U+FFFD. Other invalid bytes (C0, C1, a lone continuation byte) are
 * missed: such a body is parsed whole, as before, only slower than it could be. A 65-131 kB body whose
 * accents are all Latin-1 (é, ü) stays a one-byte string under the large-object limit, where one
 * string is faster.
 */
function twoByte(body: Buffer): boolean {
  for (let i = 0; i < body.length; i++) if ((body[i] as number) >= 0xc4) return true;
  return false;
}

/** The bytes JSON allows between tokens. */
function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The index of the next `"` from `from`, or -1: Uint8Array#indexOf is a native search too. */
function indexOfQuote(b: Uint8Array, from: number): number {
  return b.indexOf(0x22, from);
}

/** Where a body's record array lies: `[` at `open`, `]` at `close`, and each element's [start, end) in `cuts`. */
export interface RecordCuts {
  open: number;
  close: number;
  cuts: number[];
  /**
   * Whether a key `order_index`, `last_record_index` or `last_record_id` is followed by a number with
   * a fraction or an exponent anywhere in the body: what core/json.ts cursorNotPlain looks for in text,
   * found here in the same pass (the body is then parsed whole, losslessly).
   */
  floatCursor: boolean;
}

// The cursor keys' bytes, by length (core/json.ts CURSOR_KEYS).
const CURSOR_KEY_BYTES = new Map(['order_index', 'last_record_index', 'last_record_id'].map((k) => [k.length, Buffer.from(k)] as const));

/**
 * Whether the string b[start, end) (its closing quote at `end`) is a cursor key followed by `:` and a
 * number written with a fraction or an exponent: cursorNotPlain's match, read from bytes. Only JSON's
 * own white space is skipped: any other makes the body invalid JSON, which the parse reports.
 */
function floatCursorAt(b: Uint8Array, start: number, end: number): boolean {
  const key = CURSOR_KEY_BYTES.get(end - start);
  if (key === undefined) return false;
  for (let k = 0; k < key.length; k++) if (b[start + k] !== key[k]) return false;
  let i = end + 1;
  while (isSpace(b[i])) i++;
  if (b[i] !== 0x3a) return false;
  i++;
  while (isSpace(b[i])) i++;
  if (b[i] === 0x2d) i++;
  while ((b[i] as number) >= 0x30 && (b[i] as number) <= 0x39) i++;
  const c = b[i];
  return c === 0x2e || c === 0x65 || c === 0x45;
}

/**
 * Finds the record array of a body: the body itself when it is an array, else the value of its only
 * top-level `data` key. Undefined when the body has another shape, or is not well formed enough to
 * cut (then it is parsed whole, which reports what is wrong with it), or has more than `maxRecords`.
 */
export function findRecordCuts(b: Uint8Array, maxRecords = Number.POSITIVE_INFINITY): RecordCuts | undefined {
  // Two cuts per record; the comma after record k pushes its end and record k+1's start.
  const maxCuts = 2 * maxRecords - 1;
  const n = b.length;
  let i = 0;
  while (isSpace(b[i])) i++;
  const top = b[i];
  if (top !== 0x7b && top !== 0x5b) return undefined;
  // Depth of the array's elements: 1 for a bare array, 2 for `data` in an object.
  const arrayDepth = top === 0x5b ? 1 : 2;
  let depth = 0;
  let open = -1;
  let close = -1;
  const cuts: number[] = [];
  let expectKey = false;
  let keyIsData = false;
  let dataKeys = 0;
  let floatCursor = false;
  for (; i < n; i++) {
    const c = b[i];
    if (c === 0x22) {
      const start = ++i;
      // The string's closing quote: the next quote (found by the native memchr, most of a page's bytes
      // are string text) that an odd run of backslashes does not escape. The same quote the byte-by-byte
      // reading finds, where each backslash skips the byte after it, whatever it is.
      for (;;) {
        const q = indexOfQuote(b, i);
        if (q < 0) return undefined;
        let k = q;
        while (k > start && b[k - 1] === 0x5c) k--;
        i = q;
        if ((q - k) % 2 === 0) break;
        i++;
      }
      // Only a string as long as a cursor key (11, 14 or 17 bytes) is compared with them.
      const length = i - start;
      if ((length === 11 || length === 14 || length === 17) && !floatCursor && floatCursorAt(b, start, i)) floatCursor = true;
      if (expectKey && depth === 1) {
        expectKey = false;
        keyIsData = length === 4 && b[start] === 0x64 && b[start + 1] === 0x61 && b[start + 2] === 0x74 && b[start + 3] === 0x61;
        if (keyIsData) dataKeys++;
        // `"d\u0061ta"` is the key `data` too: an envelope key with an escape is not read here.
        else for (let k = start; k < i; k++) if (b[k] === 0x5c) return undefined;
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 1) {
        if (top === 0x7b) expectKey = true;
        else {
          open = i;
          cuts.push(i + 1);
        }
      } else if (depth === 2 && top === 0x7b && keyIsData && c === 0x5b) {
        open = i;
        cuts.push(i + 1);
      }
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === arrayDepth && open >= 0 && close < 0) {
        if (c !== 0x5d) return undefined;
        close = i;
        cuts.push(i);
      }
      // The first byte opened depth 1, so the top level's close ends the scan before depth goes below 0.
      depth--;
      if (depth === 0) {
        i++;
        break;
      }
    } else if (c === 0x2c) {
      if (depth === arrayDepth && open >= 0 && close < 0) {
        cuts.push(i, i + 1);
        // Given up early: a page of tiny records is parsed whole (parseCut).
        if (cuts.length > maxCuts) return undefined;
      } else if (depth === 1) {
        expectKey = true;
        keyIsData = false;
      }
    }
  }
  while (isSpace(b[i])) i++;
  if (i !== n || depth !== 0 || open < 0 || close < 0 || dataKeys > 1) return undefined;
  return { open, close, cuts, floatCursor };
}

/** Whether a body decoded whole would be a large object (exported for its tests). */
export function largeText(body: Buffer): boolean {
  return body.length >= ASCII_FROM || (body.length >= TWO_BYTE_FROM && !isAscii(body) && twoByte(body));
}

/**
 * Parses a body as `parseJson(body.toString('utf8'))` does (see the module's comment). Throws
 * SyntaxError on bad JSON. The lossless parser recurses: a body that needs it and holds a value
 * nested a few thousand levels deep overflows the stack there, and is read record by record instead
 * (parseDeep).
 */
export function parseJsonBytes(body: Buffer): unknown {
  if (largeText(body)) {
    const value = parseCut(body);
    if (value !== undefined) return value;
  }
  try {
    return parseJson(body.toString('utf8'));
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return parseDeep(body);
  }
}

/**
 * A body the lossless parser could not read whole for its depth: its envelope and each record read
 * apart, a record too deep for the lossless parser read by JSON.parse, which reads any depth (an
 * integer of it past 2^53 may be rounded, but such a record is deeper than any the record rules let
 * through: store/model/storable.ts MAX_DEPTH, and its text is quarantined as it came). A body that
 * cannot be cut at its records, or whose envelope is that deep, is a SyntaxError: a page unsound as
 * a whole.
 */
function parseDeep(body: Buffer): unknown {
  const found = findRecordCuts(body);
  const tooDeep = () => new SyntaxError('JSON nested too deep to read exactly (a value inside it is thousands of levels deep)');
  if (found === undefined) throw tooDeep();
  const { open, close, cuts } = found;
  const read = (text: string): unknown => {
    try {
      return parseJson(text);
    } catch (err) {
      if (err instanceof RangeError) return JSON.parse(text);
      throw err;
    }
  };
  let envelope: unknown;
  try {
    envelope = parseJson(body.toString('utf8', 0, open + 1) + body.toString('utf8', close));
  } catch (err) {
    throw err instanceof RangeError ? tooDeep() : err;
  }
  const records: unknown[] = [];
  const empty = cuts.length === 2 && body.subarray(open + 1, close).every(isSpace);
  if (!empty) for (let k = 0; k < cuts.length; k += 2) records.push(read(body.toString('utf8', cuts[k], cuts[k + 1])));
  if (Array.isArray(envelope)) return records;
  (envelope as { data: unknown[] }).data = records;
  return envelope;
}

/** The body's value from its parts, or undefined to parse it whole (exported for its tests). */
export function parseCut(body: Buffer, minBytesPerRecord = MIN_BYTES_PER_RECORD): unknown {
  const found = findRecordCuts(body, minBytesPerRecord > 0 ? Math.floor(body.length / minBytesPerRecord) : undefined);
  // A cursor written as a float: the lossless parser reads the whole body, as parseJson does.
  if (found === undefined || found.floatCursor) return undefined;
  const { open, close, cuts } = found;
  try {
    // The envelope first: a page whose envelope is not JSON wastes no work on its records.
    const envelope = parsePlain(body.toString('utf8', 0, open + 1) + body.toString('utf8', close));
    if (envelope === undefined) return undefined;
    const records: unknown[] = [];
    const empty = cuts.length === 2 && body.subarray(open + 1, close).every(isSpace);
    if (!empty) {
      for (let k = 0; k < cuts.length; k += 2) {
        const value = parsePlain(body.toString('utf8', cuts[k], cuts[k + 1]), true);
        if (value === undefined) return undefined;
        records.push(value);
      }
    }
    if (Array.isArray(envelope)) return records;
    (envelope as { data: unknown[] }).data = records;
    return envelope;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}
