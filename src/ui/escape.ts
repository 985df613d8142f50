/**
 * Text from the service (campaign names, types, error messages) on its way to a terminal. A name
 * holding ESC sequences could clear the screen, retitle the window or write the clipboard (OSC 52),
 * so every human output path shows such characters as visible escapes. Only what is shown changes:
 * the mirror keeps every byte as sent, and --json carries the exact value.
 */

/**
 * C0 controls, DEL, C1 controls (0x9b alone is a CSI to many terminals), bidi marks, embeddings,
 * overrides and isolates (they reorder the text that follows), line and paragraph separators, and lone
 * surrogates (not text at all).
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]|\p{Cs}/gu;
/** The same, but line feeds and tabs are kept: for blocks of our own lines (tables, TSV, hints). */
const UNSAFE_BUT_LF = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]|\p{Cs}/gu;
/** What JSON.stringify leaves raw but a terminal would act on: its output keeps meaning with these as \uXXXX. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function hex(code: number, digits: number): string {
  return code.toString(16).padStart(digits, '0');
}

function escapeChar(c: string): string {
  const code = c.codePointAt(0) as number;
  return NAMED[c] ?? (code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`);
}

/**
 * One line of service text, safe to show: `\x1b`, `\n`, `\u202e`… instead of the characters. A
 * backslash is left as it is, so escaping twice changes nothing (a table's cells pass through Output).
 */
export function showText(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** Like showText, but line feeds and tabs stay: for a block of lines we composed (a table, TSV). */
export function showLines(text: string): string {
  return text.replace(UNSAFE_BUT_LF, escapeChar);
}

/** Cells longer than this are cut in tables; --json has the whole value. */
export const CELL_MAX = 60;

/** A table cell: escaped, then cut to `max` characters with `…`. */
export function cell(text: string, max = CELL_MAX): string {
  const shown = showText(text);
  if (shown.length <= max) return shown;
  const chars = Array.from(shown);
  return chars.length <= max ? shown : `${chars.slice(0, max - 1).join('')}…`;
}

/** JSON text with DEL, C1, bidi controls and separators written as \uXXXX: the same document, terminal-safe. */
export function safeJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${hex(c.charCodeAt(0), 4)}`);
}
