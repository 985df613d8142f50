/**
 * Taking the API key out of text that came from the service. A service (or something posing as one)
 * may send the key back anywhere: in an error message, a cursor, a campaign's name or type. Its
 * text reaches the terminal, the request log, `last_error` in the mirror and /healthz, often cut to
 * a few dozen characters; a cut key is still most of the key. So any run of 8 or more consecutive
 * characters of the key is taken out, not only the whole key, and the cut (`shorten`) takes only
 * text that has been through a `Redact`, which the type enforces.
 *
 * What counts as the key: the key as sent, URL-encoded (it travels in a query string when echoed as
 * a cursor) and JSON-escaped (a JSON text quoting it), each matched with ASCII letters of any case
 * (an upper-cased key is the key to anyone who tries both cases of its letters).
 */

declare const redacted: unique symbol;

/** Text with no run of the key in it: the only text `shorten` takes. */
export type Redacted = string & { readonly [redacted]: true };

/** Takes every run of the key out of a text (see `redactor`). */
export type Redact = (text: string) => Redacted;

/** What a run of the key is replaced with. */
export const KEY_MARK = '[the API key]';

/** The shortest run of the key that is taken out; a shorter key is taken out whole. */
export const MIN_RUN = 8;

/** A character code with ASCII capitals folded to lower case. */
function fold(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

const BASE = 0x01000193;

/** The rolling hash of `w` folded codes: h = sum(code[i] * BASE^(w-1-i)) mod 2^32. */
function hashOf(text: string, from: number, w: number): number {
  let h = 0;
  for (let i = from; i < from + w; i++) h = (Math.imul(h, BASE) + fold(text.charCodeAt(i))) >>> 0;
  return h;
}

/**
 * The redaction of one key, built once. A text is scanned once with a rolling hash of its next `w`
 * characters (w = 8, or the key's length when shorter), looked up among the hashes of the key's own
 * windows of `w` and then compared: every window of the text that is one of the key's is taken out,
 * windows that overlap or touch as one run. Linear in the text's length, whatever the key's.
 */
export function redactor(key: string): Redact {
  const forms = [...new Set([key, encodeURIComponent(key), JSON.stringify(key).slice(1, -1)])].filter((k) => k.length > 0);
  if (forms.length === 0) return (text) => text as Redacted;
  const w = Math.min(MIN_RUN, ...forms.map((k) => k.length));
  const windows = new Set<string>();
  const hashes = new Set<number>();
  for (const k of forms) {
    for (let i = 0; i + w <= k.length; i++) {
      windows.add(foldText(k.slice(i, i + w)));
      hashes.add(hashOf(k, i, w));
    }
  }
  // BASE^(w-1), to take the leaving character out of the rolling hash.
  let top = 1;
  for (let i = 1; i < w; i++) top = Math.imul(top, BASE) >>> 0;
  return (text) => {
    if (text.length < w) return text as Redacted;
    let out = '';
    // Up to where the text is copied; the run being taken out, [start, end).
    let kept = 0;
    let start = -1;
    let end = -1;
    let h = hashOf(text, 0, w);
    for (let i = 0; ; i++) {
      if (hashes.has(h) && windows.has(foldText(text.slice(i, i + w)))) {
        if (i > end) {
          if (start >= 0) out += text.slice(kept, start) + KEY_MARK;
          if (start >= 0) kept = end;
          start = i;
        }
        end = i + w;
      }
      if (i + w >= text.length) break;
      h = (Math.imul(h - Math.imul(fold(text.charCodeAt(i)), top), BASE) + fold(text.charCodeAt(i + w))) >>> 0;
    }
    if (start < 0) return text as Redacted;
    return (out + text.slice(kept, start) + KEY_MARK + text.slice(end)) as Redacted;
  };
}

/** ASCII capitals folded to lower case, every other character kept: the length never changes. */
function foldText(text: string): string {
  return text.replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

/**
 * A JSON value with every string in it (names of members included) redacted; other values kept.
 * Without recursion: a value from the service may be nested deeper than the stack (JSON.parse reads
 * any depth).
 */
export function redactJson(value: unknown, redact: Redact): unknown {
  const copy = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v);
    if (Array.isArray(v)) {
      const out = new Array<unknown>(v.length);
      todo.push({ from: v, to: out });
      return out;
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      todo.push({ from: v as Record<string, unknown>, to: out });
      return out;
    }
    return v;
  };
  const todo: Array<{ from: Record<string, unknown> | unknown[]; to: Record<string, unknown> | unknown[] }> = [];
  const root = copy(value);
  while (todo.length > 0) {
    const { from, to } = todo.pop() as (typeof todo)[number];
    if (Array.isArray(from)) {
      for (let i = 0; i < from.length; i++) (to as unknown[])[i] = copy(from[i]);
      continue;
    }
    // Defined, not assigned: a member named `__proto__` stays a member.
    for (const [k, v] of Object.entries(from))
      Object.defineProperty(to, redact(k), { value: copy(v), enumerable: true, writable: true, configurable: true });
  }
  return root;
}

/** A redacted text cut to `max` characters, `…` marking the cut. */
export function shorten(text: Redacted, max: number): Redacted {
  return (text.length > max ? `${text.slice(0, max)}…` : text) as Redacted;
}
