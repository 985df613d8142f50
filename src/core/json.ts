/**
 * JSON parsing that keeps int64 values exact without slowing the common case.
 *
 * Most pages hold only safe integers, so they go through JSON.parse. A page where JSON.parse read a
 * number of magnitude 2^53 or more (an integer it may have rounded), or with a cursor field written as
 * a float or with an exponent (which JSON.parse would silently turn into an integer), is parsed
 * losslessly instead: integers past 2^53
 * become bigints, and a cursor field that is not written as a plain integer is kept as its text
 * (a `NumberText`) so validation can reject it by name.
 */
import { createRequire } from 'node:module';
import type * as Lossless from 'lossless-json';
import type { LosslessNumber } from 'lossless-json';

/**
 * lossless-json, loaded on the first page that needs it: most pages, and commands that only write
 * JSON (status, export), never do (a light start).
 */
let lossless: typeof Lossless | undefined;
function losslessJson(): typeof Lossless {
  lossless ??= createRequire(import.meta.url)('lossless-json') as typeof Lossless;
  return lossless;
}

// A cursor written as a float or with an exponent, which JSON.parse would silently read as an
// integer: `"order_index": 5.0`. The key's opening quote is checked apart (cursorNotPlain): a pattern
// that starts with `"` is tried at every quote of the page, which made this scan cost half of
// JSON.parse on a DETAILED page (two-byte text: names with accents); starting at the key's letters
// it costs a fifth to a half of that.
const CURSOR_KEY_NOT_PLAIN = /(?:order_index|last_record_index|last_record_id)"\s*:\s*-?\d*[.eE]/g;
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
    if (CURSOR_KEYS.has(key)) return new NumberText(text);
    // A number past a double's range (1e400) would read as Infinity and be written back as null: kept
    // as written, for the record rules to refuse by its text (store/model/storable.ts).
    const n = Number(text);
    return Number.isFinite(n) ? n : new NumberText(text);
  }
  return value;
}

/**
 * Whether a parsed value holds a number JSON.parse may have rounded: an integer written past 2^53
 * reads as a double of magnitude >= 2^53, so any number that large sends the text to the lossless
 * parser (a large float comes back the same from both). Walking the parsed value costs a fraction of
 * scanning its text for 16-digit runs (docs/performance.md). Iterative, so a hostile depth JSON.parse accepts cannot overflow the stack here.
 */
function mayHaveRounded(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!(Math.abs(v) <= Number.MAX_SAFE_INTEGER)) return true;
    } else if (v !== null && typeof v === 'object') {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const x = v[i];
          if (typeof x === 'object' ? x !== null : typeof x === 'number') stack.push(x);
        }
      } else {
        for (const k in v) {
          const x = (v as Record<string, unknown>)[k];
          if (typeof x === 'object' ? x !== null : typeof x === 'number') stack.push(x);
        }
      }
    }
  }
  return false;
}

/**
 * Whether `text` holds `"order_index"`, `"last_record_index"` or `"last_record_id"` followed by a
 * number written with a fraction or an exponent: the same matches as
 * /"(?:order_index|last_record_index|last_record_id)"\s*:\s*-?\d*[.eE]/ (test/unit/core/json.test.ts
 * compares them). A match of the key without its opening quote (`"xorder_index"`) is skipped; no
 * match can start inside another, so the search goes on from its end.
 */
export function cursorNotPlain(text: string): boolean {
  CURSOR_KEY_NOT_PLAIN.lastIndex = 0;
  for (let m = CURSOR_KEY_NOT_PLAIN.exec(text); m !== null; m = CURSOR_KEY_NOT_PLAIN.exec(text)) {
    if (text.charCodeAt(m.index - 1) === 34) return true;
  }
  return false;
}

/** Parses JSON text; integers past 2^53 come back as bigints. Throws SyntaxError on bad JSON. */
export function parseJson(text: string): unknown {
  // JSON.parse never answers undefined: undefined is parsePlain's "not exactly" (null is a value).
  const value = parsePlain(text);
  return value !== undefined ? value : losslessJson().parse(text, revive);
}

/**
 * Parses JSON text when JSON.parse reads it exactly: undefined when the lossless parser is needed (a
 * cursor written as a float, a number past 2^53). Throws SyntaxError on bad JSON. With `cursorsChecked`
 * the text is not searched for float cursors: the caller has looked for them in the bytes already.
 */
export function parsePlain(text: string, cursorsChecked = false): unknown {
  if (!cursorsChecked && cursorNotPlain(text)) return undefined;
  const value: unknown = JSON.parse(text);
  return mayHaveRounded(value) ? undefined : value;
}

/**
 * JSON text of a value that may hold bigints (written as bare integers, exactly). JSON.stringify
 * recurses: a value nested a few thousand levels deep (JSON.parse reads any depth) overflows the
 * stack, and is then written by writeDeep, which keeps its own stack.
 */
export function toJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (err instanceof RangeError) return writeDeep(value);
    if (!(err instanceof TypeError)) throw err;
  }
  try {
    const marked = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `\u0000int64:${v}` : v));
    return marked.replace(/"\\u0000int64:(-?\d+)"/g, '$1');
  } catch (err) {
    if (err instanceof RangeError) return writeDeep(value);
    throw err;
  }
}

/** An array or object being written by writeDeep: the next element or key is `i`. */
type Open =
  | { items: unknown[]; keys: undefined; i: number }
  | { items: Record<string, unknown>; keys: string[]; i: number; wrote: boolean };

/**
 * A value after its `toJSON`, as JSON.stringify sees it; undefined for what JSON.stringify leaves out
 * of an object (undefined, a function, a symbol).
 */
function jsonValue(key: string, v: unknown): unknown {
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(key: string): unknown }).toJSON(key);
  }
  return typeof v === 'function' || typeof v === 'symbol' ? undefined : v;
}

/**
 * toJson without recursion: the same text JSON.stringify writes (bigints as bare integers), for a
 * value nested deeper than the stack allows. Only values read from JSON reach it: no cycles.
 */
function writeDeep(root: unknown): string {
  let out = '';
  const stack: Open[] = [];
  /** Writes a scalar, or opens an array or object (its elements follow). */
  const write = (v: unknown) => {
    if (v === null || v === undefined) out += 'null';
    else if (typeof v === 'string') out += JSON.stringify(v);
    else if (typeof v === 'number') out += Number.isFinite(v) ? String(v) : 'null';
    else if (typeof v === 'bigint' || typeof v === 'boolean') out += String(v);
    else if (Array.isArray(v)) {
      out += '[';
      stack.push({ items: v, keys: undefined, i: 0 });
    } else {
      out += '{';
      stack.push({ items: v as Record<string, unknown>, keys: Object.keys(v as object), i: 0, wrote: false });
    }
  };
  write(jsonValue('', root));
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Open;
    if (top.keys === undefined) {
      if (top.i === top.items.length) {
        out += ']';
        stack.pop();
        continue;
      }
      if (top.i > 0) out += ',';
      const i = top.i++;
      write(jsonValue(String(i), top.items[i]));
      continue;
    }
    // An object: the next key whose value JSON.stringify keeps.
    let next: unknown;
    let key: string | undefined;
    while (top.i < top.keys.length && key === undefined) {
      const k = top.keys[top.i++] as string;
      next = jsonValue(k, top.items[k]);
      if (next !== undefined) key = k;
    }
    if (key === undefined) {
      out += '}';
      stack.pop();
      continue;
    }
    out += `${top.wrote ? ',' : ''}${JSON.stringify(key)}:`;
    top.wrote = true;
    write(next);
  }
  return out;
}
