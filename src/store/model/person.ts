/**
 * Finding one candidate anywhere in a record, and taking them out of it: the one rule of `forget`
 * for every store (SQLite rows, NDJSON lines, PostgreSQL rows), over parsed JSON, with no I/O.
 *
 * An object names a person by its `user` (an object's `id` and `email`, or a bare id or e-mail), its
 * `user_id`, and its `email` or `user_email`. A record that names them at its top is theirs and goes
 * whole. Any object inside a record that names them (a score detail of theirs in another candidate's
 * result, any nested `user`) is removed from its array or its parent, and a string value that is
 * their e-mail becomes ERASED; the rest of the record stays.
 *
 * Ids are compared as text (a number as its decimal text, as the tables' columns hold it), e-mails
 * by emailKey (core/email.ts).
 */
import { ERASED_IN_TEXT, emailKey, withoutCandidate } from '../../core/email.js';

type Obj = Record<string, unknown>;

/** Who is erased: a test on an id and on an e-mail. */
export interface Person {
  hasId(id: string): boolean;
  hasEmail(email: string): boolean;
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** An id as text: a string as it is, a number or bigint as its decimal text; nothing else is an id. */
function idText(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint') return String(v);
  return undefined;
}

function emailText(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The ids and e-mails an object names a person by (none for most objects). */
function namesOf(o: Obj): { ids: string[]; emails: string[] } {
  const ids: string[] = [];
  const emails: string[] = [];
  const push = <T>(list: T[], v: T | undefined) => {
    if (v !== undefined) list.push(v);
  };
  const u = o.user;
  if (isObj(u)) {
    push(ids, idText(u.id));
    push(emails, emailText(u.email));
  } else {
    // A bare `user`: an id or an e-mail, whichever it is.
    push(ids, idText(u));
    push(emails, emailText(u));
  }
  push(ids, idText(o.user_id));
  push(emails, emailText(o.email));
  push(emails, emailText(o.user_email));
  return { ids, emails };
}

/** Whether an object names the person (a table's row as `{ user_id, user_email }` too). */
export function names(o: Obj, p: Person): boolean {
  const { ids, emails } = namesOf(o);
  return ids.some((id) => p.hasId(id)) || emails.some((e) => p.hasEmail(e));
}

function isTheirEmail(v: unknown, p: Person): boolean {
  return typeof v === 'string' && v.includes('@') && p.hasEmail(v);
}

/** What scrubPerson did to a record. */
export type Scrubbed =
  /** The record is theirs: it goes whole. */
  | { kind: 'whole' }
  /** Another's record that held them: `value` is it without them (changed in place), `parts` what was taken out. */
  | { kind: 'part'; value: unknown; parts: number }
  | { kind: 'none' };

const NONE: Scrubbed = Object.freeze({ kind: 'none' });
const WHOLE: Scrubbed = Object.freeze({ kind: 'whole' });

/**
 * Takes the person out of a parsed record. Changes `record` in place when the answer is `part`;
 * leaves it as it was otherwise. Iterative: a record nested as deep as JSON.parse allows cannot
 * overflow the stack.
 */
export function scrubPerson(record: unknown, p: Person): Scrubbed {
  if (isObj(record) && names(record, p)) return WHOLE;
  let parts = 0;
  const stack: unknown[] = [record];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      let kept = 0;
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (isObj(x) && names(x, p)) {
          parts++;
          continue;
        }
        if (isTheirEmail(x, p)) {
          parts++;
          v[kept++] = ERASED_IN_TEXT;
          continue;
        }
        v[kept++] = x;
        if (x !== null && typeof x === 'object') stack.push(x);
      }
      v.length = kept;
    } else if (isObj(v)) {
      for (const k of Object.keys(v)) {
        const x = v[k];
        if (isObj(x) && names(x, p)) {
          parts++;
          delete v[k];
        } else if (isTheirEmail(x, p)) {
          parts++;
          v[k] = ERASED_IN_TEXT;
        } else if (x !== null && typeof x === 'object') stack.push(x);
      }
    }
  }
  return parts === 0 ? NONE : { kind: 'part', value: record, parts };
}

/** A person known by their ids and e-mails in clear (a forget as it runs). */
export interface KnownPerson extends Person {
  /** Their ids, as text. */
  ids: ReadonlySet<string>;
  /** Their e-mails' keys (emailKey). */
  emails: ReadonlySet<string>;
}

export function knownPerson(ids: Iterable<string>, emails: Iterable<string>): KnownPerson {
  const idSet = new Set(ids);
  const keys = new Set([...emails].map(emailKey));
  return { ids: idSet, emails: keys, hasId: (id) => idSet.has(id), hasEmail: (e) => keys.has(emailKey(e)) };
}

/**
 * Who is who across a mirror: every id and e-mail that one object names together are one person's.
 * Fed every record (add), it answers for what forget was given the person to erase (find): every id
 * of theirs and every e-mail any of those ids was served with, so a record re-served after the
 * candidate's e-mail changed is erased with its older versions.
 */
export class PersonGraph {
  private readonly parent = new Map<string, string>();

  /** Records the ids and e-mails each object of `record` names together. */
  add(record: unknown): void {
    const stack: unknown[] = [record];
    while (stack.length > 0) {
      const v = stack.pop();
      if (v === null || typeof v !== 'object') continue;
      if (Array.isArray(v)) {
        for (const x of v) if (x !== null && typeof x === 'object') stack.push(x);
        continue;
      }
      const o = v as Obj;
      const { ids, emails } = namesOf(o);
      const nodes = [...ids.map((id) => `i:${id}`), ...emails.map((e) => `e:${emailKey(e)}`)];
      for (const n of nodes) this.union(nodes[0] as string, n);
      for (const k in o) {
        const x = o[k];
        if (x !== null && typeof x === 'object') stack.push(x);
      }
    }
  }

  /**
   * The person `asked` (an id or an e-mail) is: the ids and e-mails linked to it, and `asked` itself
   * as either (found nowhere, it still matches a stray e-mail or an error text).
   */
  find(asked: string): KnownPerson {
    const ids = new Set([asked]);
    const emails = new Set([emailKey(asked)]);
    const roots = new Set([`i:${asked}`, `e:${emailKey(asked)}`].filter((n) => this.parent.has(n)).map((n) => this.root(n)));
    if (roots.size > 0) {
      for (const n of this.parent.keys()) {
        if (!roots.has(this.root(n))) continue;
        if (n.startsWith('i:')) ids.add(n.slice(2));
        else emails.add(n.slice(2));
      }
    }
    return knownPerson(ids, emails);
  }

  private root(n: string): string {
    let r = n;
    for (let up = this.parent.get(r); up !== undefined && up !== r; up = this.parent.get(r)) r = up;
    // Path compression: the next walk from `n` is one step.
    for (let x = n; x !== r; ) {
      const up = this.parent.get(x) as string;
      this.parent.set(x, r);
      x = up;
    }
    return r;
  }

  private union(a: string, b: string): void {
    if (!this.parent.has(a)) this.parent.set(a, a);
    if (!this.parent.has(b)) this.parent.set(b, b);
    const ra = this.root(a);
    const rb = this.root(b);
    if (ra !== rb) this.parent.set(rb, ra);
  }
}

/**
 * A person as an unfinished erasure keeps them (store/sqlite/erasure-mark.ts): keyed digests of their ids
 * and e-mails, so the mark holds no e-mail or id in clear, yet lets the erasure be finished.
 */
export function personDigests(p: KnownPerson, key: Buffer): string[] {
  return [...[...p.ids].map((id) => digest(key, `i:${id}`)), ...[...p.emails].map((e) => digest(key, `e:${e}`))];
}

/** The person of personDigests. */
export function personOfDigests(digests: readonly string[], key: Buffer): Person {
  const set = new Set(digests);
  return { hasId: (id) => set.has(digest(key, `i:${id}`)), hasEmail: (e) => set.has(digest(key, `e:${emailKey(e)}`)) };
}

function digest(key: Buffer, text: string): string {
  return process.getBuiltinModule('node:crypto').createHmac('sha256', key).update(text).digest('base64url');
}

/**
 * Whether a quarantined record's text names the person, by the one identity rule, never by a
 * substring: parsed, a record theirs or holding them anywhere (the rule above). A record whose text
 * is not JSON is read as far as it goes: one of their e-mails anywhere, as a whole address
 * (`withoutCandidate`'s boundaries: `ann@example.com` is not inside `joann@example.com`), or one of
 * their ids as the value of a `user_id` or `user` key, or of the `id` of a `user` object. An id
 * anywhere else (a score of 7, an order_index of 17) is not theirs.
 */
export function quarantinedNames(raw: string, p: Person, terms: readonly string[]): boolean {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    const emails = terms.filter((t) => t.includes('@'));
    if (emails.length > 0 && withoutCandidate(raw, emails) !== raw) return true;
    for (const m of [...raw.matchAll(KEYED_ID), ...raw.matchAll(USER_OBJECT_ID)]) {
      const id = m[1] ?? m[2];
      if (id !== undefined && (p.hasId(id) || terms.includes(id))) return true;
    }
    return false;
  }
  return scrubPerson(value, p).kind !== 'none';
}

/** A `user_id` or `user` key's value in a text that is not JSON: a string's text, or a number. */
const KEYED_ID = /"(?:user_id|user)"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))/g;
/** The `id` of a `user` object, in a text that is not JSON. */
const USER_OBJECT_ID = /"user"\s*:\s*\{[^{}]*?"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))/g;
