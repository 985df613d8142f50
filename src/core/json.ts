/**
 * JSON parsing that keeps int64 values exact without slowing the common case.
 *
 * Most pages hold only safe integers, so they go through JSON.parse. A page that may hold an integer
 * past 2^53 (a number of 16+ digits), or a cursor field written as a float or with an exponent (which
 * JSON.parse would silently turn into an integer), is parsed losslessly instead: integers past 2^53
 * become bigints, and a cursor field that is not written as a plain integer is kept as its text
 * (a `NumberText`) so validation can reject it by name.
 */
import { createRequire } from 'node:module';
import type * as Lossless from 'lossless-json';
import type { LosslessNumber } from 'lossless-json';

/**
 * lossless-json, loaded on the first page that needs it: most pages, and commands that only write
 * JSON (status, export), never do (a light start, issue 15).
 */
let lossless: typeof Lossless | undefined;
function losslessJson(): typeof Lossless {
  lossless ??= createRequire(import.meta.url)('lossless-json') as typeof Lossless;
  return lossless;
}

// A JSON number can only follow `:`, `,` or `[` (and whitespace): anchoring on those keeps the
// scan at a fraction of JSON.parse's cost. A match inside a string only costs a lossless parse.
const MAYBE_UNSAFE = /[:,[]\s*-?\d{16}/;
const CURSOR_NOT_PLAIN = /"(?:order_index|last_record_index|last_record_id)"\s*:\s*-?\d*[.eE]/;
const CURSOR_KEYS = new Set(['order_index', 'last_record_index', 'last_record_id']);

/** A number token kept as written, because reading it as a JS number would hide a defect. */
export class NumberText {
  constructor(readonly text: string) {}
  toJSON(): string {
    return this.text;
  }
}

function revive(key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && (value as LosslessNumber).isLosslessNumber === true) {
    const text = (value as LosslessNumber).value;
    if (losslessJson().isInteger(text)) {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : BigInt(text);
    }
    return CURSOR_KEYS.has(key) ? new NumberText(text) : Number(text);
  }
  return value;
}

/** Parses JSON text; integers past 2^53 come back as bigints. Throws SyntaxError on bad JSON. */
export function parseJson(text: string): unknown {
  if (!MAYBE_UNSAFE.test(text) && !CURSOR_NOT_PLAIN.test(text)) return JSON.parse(text);
  return losslessJson().parse(text, revive);
}

/** JSON text of a value that may hold bigints (written as bare integers, exactly). */
export function toJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    const marked = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `\u0000int64:${v}` : v));
    return marked.replace(/"\\u0000int64:(-?\d+)"/g, '$1');
  }
}
