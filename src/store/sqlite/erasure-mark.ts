/**
 * The mark of an erasure not finished yet (`meta` ERASE_PENDING_KEY): its rule (whom it erases, and
 * the cut of a retention: store/model/erase-rule.ts) and which NDJSON files are done, so a forget killed or stopped by a full disk between two files is finished by the
 * next forget or pull, file by file, before anything else runs.
 *
 * Whom: keyed digests (HMAC-SHA-256) of the person's ids and e-mail keys (store/model/person.ts), under a
 * random key drawn for this erasure and kept in the mark. The mark lets the erasure recognise the
 * person in a line it reads, and holds no e-mail or id in clear: it says no more of them than the
 * mirror it is in (which is 0600, and still holds them until the erasure is done). The mark is
 * deleted, with secure_delete on, and the database rebuilt once everything is done (erase.ts scrub).
 *
 * A mark written before this shape (a bare time) names nobody: finishing it is the rebuild alone.
 */
import { randomBytes } from 'node:crypto';
import type { EraseRule } from '../model/erase-rule.js';
import { type KnownPerson, personDigests, personOfDigests } from '../model/person.js';
import { ERASE_PENDING_KEY } from './checkpoints.js';
import type { Db } from './db.js';

interface Stored {
  at: string;
  key: string;
  /** The person's digests; empty for a retention alone. */
  person: string[];
  /** A retention's cut (ISO 8601): records dated before it go. */
  before?: string;
  done: string[];
}

/** An unfinished erasure as the mark records it. */
export interface PendingErasure {
  /** What it erases; undefined for a mark of the older shape (only the rebuild is left to do). */
  rule: EraseRule | undefined;
  /** The NDJSON files whose rewrite is committed (the rename is finishRewrites'). */
  done: ReadonlySet<string>;
}

const set = (db: Db, value: string) =>
  db
    .prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
    .run(ERASE_PENDING_KEY, value);

function read(db: Db): Stored | string | undefined {
  const value = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(ERASE_PENDING_KEY) as string | undefined;
  if (value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as Stored;
    if (parsed && typeof parsed.key === 'string' && Array.isArray(parsed.person) && Array.isArray(parsed.done)) return parsed;
  } catch {
    // The older shape: a time.
  }
  return value;
}

/** The unfinished erasure, if any. */
export function pendingErasure(db: Db): PendingErasure | undefined {
  const stored = read(db);
  if (stored === undefined) return undefined;
  if (typeof stored === 'string') return { rule: undefined, done: new Set() };
  const before = stored.before === undefined ? undefined : Date.parse(stored.before);
  const person = stored.person.length === 0 ? undefined : personOfDigests(stored.person, Buffer.from(stored.key, 'base64url'));
  return { rule: { person, before: Number.isFinite(before) ? before : undefined }, done: new Set(stored.done) };
}

/**
 * Records that the rule's records are being erased (the person `p`, records dated before `before`),
 * no file done yet. Call in the transaction of the erasure's first change.
 */
export function beginErasure(db: Db, p: KnownPerson | undefined, before?: number): void {
  const key = randomBytes(32);
  const stored: Stored = {
    at: new Date().toISOString(),
    key: key.toString('base64url'),
    person: p === undefined ? [] : personDigests(p, key),
    ...(before === undefined ? {} : { before: new Date(before).toISOString() }),
    done: [],
  };
  set(db, JSON.stringify(stored));
}

/** Records that `path` is done. Call in the transaction that commits its rewrite. */
export function fileDone(db: Db, path: string): void {
  const stored = read(db);
  if (stored === undefined || typeof stored === 'string') return;
  if (!stored.done.includes(path)) stored.done.push(path);
  set(db, JSON.stringify(stored));
}

/** Ends the mark (after the rebuild, or for an erasure that found nothing). */
export function endErasure(db: Db): void {
  db.prepare('DELETE FROM meta WHERE key = ?').run(ERASE_PENDING_KEY);
}
