/**
 * What every backend can store, as one rule (sync/records.ts applies it with the record rules, before
 * any sink sees a page): a record that breaks it is quarantined (store/model/quarantine.ts) on SQLite,
 * NDJSON and PostgreSQL alike, its field at fault named, and the rest of its page is stored.
 */
import { NumberText, toJson } from '../../core/json.js';

/**
 * The deepest nesting of arrays and objects a record may have, the record itself counting as 1. Each
 * backend has a limit of its own, and one record past it failed its page on every pull: SQLite's JSON
 * functions (which the views and the DETAILED split read `raw` with) refuse text nested deeper than
 * 1,000; PostgreSQL's jsonb, about 13,000 at its default `max_stack_depth` (2MB) and about 620 at the
 * lowest it allows (100kB; a page's statement wraps each record 3 levels deeper); V8's JSON.stringify,
 * about 3,000 to 4,000 depending on the stack left. 500 is below all of them, and far above any
 * record of the service (about 6).
 */
export const MAX_DEPTH = 500;

/**
 * The longest text, in bytes of UTF-8, of a value that fills an indexed column: a candidate's id or
 * e-mail, a score detail's id, a skill key. PostgreSQL refuses a B-tree index entry over 2,704 bytes
 * (the whole page then), and `lower(user_email)` may grow a text by half; e-mails are at most 254.
 */
export const MAX_INDEXED_BYTES = 1000;

/** U+0000, or a surrogate that is not half of a pair (with the `u` flag a pair is one code point). */
const UNSTORABLE_CHAR = /[\0\p{Cs}]/u;

/** Where a value breaks the rule, from the record down (keys and indexes), and why. */
interface Fault {
  path: Array<string | number>;
  why: string;
}

/** Why a NumberText (a number token kept as written: core/json.ts) cannot be stored as a number. */
function numberFault(n: NumberText): string {
  return Number.isFinite(Number(n.text))
    ? `${n.text} is a number written with a fraction or an exponent where campaign-sync reads an integer`
    : `${n.text} is a number out of the range of a double (about ±1.8e308), which every backend would store as something else (Infinity, null)`;
}

const nulOrSurrogate = (where: string) =>
  `${where} holds U+0000 or a lone surrogate, which PostgreSQL can store in neither text nor jsonb (and SQLite's UTF-8 cannot carry a lone surrogate)`;

/**
 * The first value of `v` (an object or array at `depth`) that breaks the rule, or undefined. Recursive,
 * but never past MAX_DEPTH + 1 calls whatever the value's depth. Strings are looked at only with
 * `strings`: the caller knows when none can hold U+0000 or a lone surrogate. Hot (every record of
 * every page): one call per object or array, none per scalar, and nothing allocated unless a value fails.
 */
function walk(v: object, depth: number, strings: boolean): Fault | undefined {
  if (depth > MAX_DEPTH) return { path: [], why: `nested deeper than ${MAX_DEPTH} levels of arrays and objects` };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      let f: Fault | undefined;
      if (typeof x === 'object') {
        if (x === null) continue;
        f = x instanceof NumberText ? { path: [], why: numberFault(x) } : walk(x, depth + 1, strings);
      } else if (strings && typeof x === 'string' && UNSTORABLE_CHAR.test(x)) f = { path: [], why: nulOrSurrogate('this string') };
      if (f !== undefined) {
        f.path.push(i);
        return f;
      }
    }
    return undefined;
  }
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    let f: Fault | undefined;
    if (strings && UNSTORABLE_CHAR.test(k)) f = { path: [], why: nulOrSurrogate('the name of this member') };
    else if (typeof x === 'object') {
      if (x === null) continue;
      // The record's order_index has a rule of its own (an int64: sync/records.ts), which names a float.
      if (x instanceof NumberText) f = depth === 1 && k === 'order_index' ? undefined : { path: [], why: numberFault(x) };
      else f = walk(x, depth + 1, strings);
    } else if (strings && typeof x === 'string' && UNSTORABLE_CHAR.test(x)) f = { path: [], why: nulOrSurrogate('this string') };
    if (f !== undefined) {
      f.path.push(k);
      return f;
    }
  }
  return undefined;
}

/** A path as a reader finds it in the record: `feedback.notes[2].text`; a deep one cut after 8 steps. */
function showPath(path: ReadonlyArray<string | number>): string {
  let out = '';
  const steps = path.length > 8 ? path.slice(0, 8) : path;
  for (const step of steps) {
    if (typeof step === 'number') out += `[${step}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(step)) out += `${out === '' ? '' : '.'}${step}`;
    // Escaped (never a raw U+0000 in the reason: it is stored as text) and cut: a name may be megabytes.
    else out += `[${JSON.stringify(step.length > 40 ? `${step.slice(0, 40)}…` : step)}]`;
  }
  return path.length > 8 ? `${out}… (${path.length} levels down)` : out;
}

type Obj = Record<string, unknown>;
const objectIn = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

/** The bytes of UTF-8 a value takes as its column's text (store/model/rows.ts `text`), when past MAX_INDEXED_BYTES; else 0. */
function tooLong(v: unknown): number {
  if (v === undefined || v === null) return 0;
  // A UTF-16 unit is at most 3 bytes of UTF-8: most values are known short without encoding them.
  if (typeof v === 'string' && v.length * 3 <= MAX_INDEXED_BYTES) return 0;
  const bytes = Buffer.byteLength(typeof v === 'string' ? v : typeof v === 'object' ? toJson(v) : String(v));
  return bytes > MAX_INDEXED_BYTES ? bytes : 0;
}

/** The first skill key of `evals` (an eval_results array) too long to index, as [its index, its bytes]. */
function longSkill(evals: unknown): [number, number] | undefined {
  if (!Array.isArray(evals)) return undefined;
  for (let i = 0; i < evals.length; i++) {
    const bytes = tooLong(objectIn(objectIn(evals[i])?.skill)?.key);
    if (bytes > 0) return [i, bytes];
  }
  return undefined;
}

/**
 * The first value of a record that fills an indexed column (store/model/rows.ts) and is too long to
 * index, as [its path, its bytes]: the candidate's id and e-mail (nested or flat), each score detail's
 * id, each skill key.
 */
function longIndexed(record: Obj): [string, number] | undefined {
  const user = objectIn(record.user);
  let bytes = 0;
  if ((bytes = tooLong(user?.id)) > 0) return ['user.id', bytes];
  if ((bytes = tooLong(user?.email)) > 0) return ['user.email', bytes];
  if ((bytes = tooLong(record.user_id)) > 0) return ['user_id', bytes];
  if ((bytes = tooLong(record.email)) > 0) return ['email', bytes];
  const skill = longSkill(record.eval_results);
  if (skill !== undefined) return [`eval_results[${skill[0]}].skill.key`, skill[1]];
  const details = record.score_details;
  if (!Array.isArray(details)) return undefined;
  for (let i = 0; i < details.length; i++) {
    const d = objectIn(details[i]);
    if (d === undefined) continue;
    const id = tooLong(d.id);
    if (id > 0) return [`score_details[${i}].id`, id];
    const s = longSkill(d.eval_results);
    if (s !== undefined) return [`score_details[${i}].eval_results[${s[0]}].skill.key`, s[1]];
  }
  return undefined;
}

/**
 * Whether a JSON text (a page's body) may hold U+0000 or a lone surrogate in a string: JSON writes
 * either only as a `\u` escape (a raw U+0000 is not JSON; bytes that are no UTF-8 decode to U+FFFD).
 * A native search, so a page without such an escape spares unstorable a test of every string.
 */
export function mayHoldUnstorable(body: Uint8Array): boolean {
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return b.includes('\\u0000') || b.includes('\\ud') || b.includes('\\uD');
}

/**
 * Why a record cannot be stored as it is on every backend, naming the field at fault; undefined when
 * it can. The one rule every sink gets (sync/records.ts applies it with the record rules, so such a
 * record is quarantined and the rest of its page stored): nesting deeper than MAX_DEPTH; a number out
 * of a double's range; U+0000 or a lone surrogate in a string or a member's name; a value of an indexed
 * column longer than MAX_INDEXED_BYTES. `strings: false` when no string of the record can hold U+0000
 * or a lone surrogate (the body that brought it has no `\u0000` nor `\ud…` escape: JSON carries them
 * no other way), which spares the walk a test of every string.
 */
export function unstorable(record: Obj, strings = true): string | undefined {
  const fault = walk(record, 1, strings);
  if (fault !== undefined) {
    const at = showPath(fault.path.reverse());
    return `${at === '' ? 'the record' : at}: ${fault.why}`;
  }
  const long = longIndexed(record);
  if (long === undefined) return undefined;
  return `${long[0]}: ${long[1]} bytes, longer than the ${MAX_INDEXED_BYTES} an indexed column takes (PostgreSQL refuses an index entry past 2,704)`;
}
