/**
 * Erasing one candidate from the local copy (`forget --user`), as a data controller must on an
 * erasure request: every row of theirs in every table (score details and eval results included) and
 * every line of theirs in the NDJSON files this database wrote, nothing else.
 *
 * The database deletes with `secure_delete` on, is rebuilt by VACUUM and its WAL truncated, so the
 * deleted bytes are overwritten rather than left in free space, free pages or the log. An NDJSON file is rewritten without the
 * user's lines into a new file that replaces it by rename; the file's new committed length and the
 * pending rename are committed first, so a crash at any instant leaves either the old file with its
 * old length or a rename that the next open finishes (`finishRewrites`), never a file the database
 * would cut.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type ErasedCounts, emailKey, errorsWithout, type Identity, identities, type StoredError } from '../core/email.js';
import { errorCode, storageError } from '../errors.js';
import { ERASE_PENDING_KEY } from './checkpoints.js';
import type { Db } from './db.js';
import { NdjsonStateError } from './ndjson-file.js';
import { forEachLine, RECORD_STREAM } from './ndjson-index.js';
import { openPrivateFile, refuseLinks } from './private-file.js';

type Obj = Record<string, unknown>;

/** The rows removed (core/email.ts; the error texts are scrubbed apart, scrubErrors) and the NDJSON files rewritten. */
export interface Erased extends Omit<ErasedCounts, 'error_texts'> {
  /** NDJSON files rewritten, with the lines removed from each. */
  files: Array<{ path: string; lines: number }>;
}

const REWRITE_KEY = 'ndjson_rewrite:';
/**
 * Marks an erasure (ERASE_PENDING_KEY in `meta`, read by Checkpoints.erasurePending): set in the
 * transaction that deletes a candidate's rows and cleared once the VACUUM and the WAL's truncation are
 * done, so a forget killed in between is finished by the next forget or pull. Its value is the time of
 * the erasure, never who was erased. Call inside the deleting transaction.
 */
function markPending(db: Db): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    ERASE_PENDING_KEY,
    new Date().toISOString(),
  );
}

/** A record's candidate (nested or flat shape): their id and e-mail, as written. */
function userOf(record: Obj): { id: unknown; email: unknown } {
  const u = record.user as Obj | null | undefined;
  const nested = u && typeof u === 'object' ? u : {};
  return { id: nested.id ?? record.user_id, email: nested.email ?? record.email ?? record.user_email };
}

/** Whether a record is the user's: by id, or by e-mail ignoring case (core/email.ts). */
function isUsers(record: Obj, user: string): boolean {
  const { id, email } = userOf(record);
  return id === user || (typeof email === 'string' && emailKey(email) === emailKey(user));
}

/** A record's id and e-mail, where they are text: what its erasure scrubs from error texts too. */
function identityOf(record: Obj): string[] {
  const { id, email } = userOf(record);
  return [id, email].filter((v): v is string => typeof v === 'string');
}

/**
 * Erases a user's rows from the mirror's tables. Runs in one transaction. Returns the counts, and
 * the ids and e-mails of the rows erased (for scrubErrors; never printed).
 */
export function eraseFromMirror(db: Db, user: string): Omit<Erased, 'files'> & { identities: string[] } {
  // SQLite's lower() folds ASCII only: the rows are compared with the NDJSON lines' own key.
  db.function('email_key', { deterministic: true }, (email: unknown) => (typeof email === 'string' ? emailKey(email) : null));
  const match = '(user_id = @user OR email_key(user_email) = @key)';
  const key = emailKey(user);
  // Deleted cells are overwritten with zeros, not left in the pages.
  db.pragma('secure_delete = ON');
  return db.transaction(() => {
    const sessions = db
      .prepare(`SELECT id, campaign_id, user_id, user_email FROM session_results WHERE ${match}`)
      .all({ user, key }) as Array<Identity & { id: string; campaign_id: string }>;
    const roles = db
      .prepare(`SELECT id, campaign_id, report_type, user_id, user_email FROM role_results WHERE ${match}`)
      .all({ user, key }) as Array<Identity & { id: string; campaign_id: string; report_type: string }>;
    let evals = 0;
    let details = 0;
    const deleteEvals = db.prepare('DELETE FROM eval_results WHERE parent_type = ? AND parent_id = ?');
    const uncount = db.prepare('UPDATE sync_state SET records = max(0, records - 1) WHERE stream = ?');
    const deleteSession = db.prepare('DELETE FROM session_results WHERE id = ?');
    const deleteRole = db.prepare('DELETE FROM role_results WHERE id = ?');
    const deleteDetailsOf = db.prepare('DELETE FROM score_details WHERE role_result_id = ?');
    const deleteDetail = db.prepare('DELETE FROM score_details WHERE id = ?');
    for (const s of sessions) {
      evals += deleteEvals.run('session_result', s.id).changes;
      deleteSession.run(s.id);
      uncount.run(`${s.campaign_id}/session`);
    }
    const detailIds = db.prepare('SELECT id FROM score_details WHERE role_result_id = ?').pluck();
    for (const r of roles) {
      for (const d of detailIds.all(r.id) as string[]) evals += deleteEvals.run('score_detail', d).changes;
      details += deleteDetailsOf.run(r.id).changes;
      deleteRole.run(r.id);
      uncount.run(`${r.campaign_id}/role/${r.report_type}`);
    }
    // Their score details under another record, if any: theirs too.
    const others = db.prepare(`SELECT id, user_id, user_email FROM score_details WHERE ${match}`).all({ user, key }) as Array<
      Identity & { id: string }
    >;
    for (const d of others) {
      evals += deleteEvals.run('score_detail', d.id).changes;
      details += deleteDetail.run(d.id).changes;
    }
    if (sessions.length + roles.length + details > 0) markPending(db);
    return {
      session_results: sessions.length,
      role_results: roles.length,
      score_details: details,
      eval_results: evals,
      identities: identities([...sessions, ...roles, ...others]),
    };
  })();
}

/**
 * The streams' last errors without the candidate (core/email.ts withoutCandidate): a service's error
 * message may quote the e-mail of a record it failed on, and `status` and watch's /healthz show the
 * text. `terms`: what forget was given, and the ids and e-mails of every row and NDJSON line it
 * erased (given an id, the e-mail goes too). Returns how many were changed; marks the erasure pending
 * (scrub's VACUUM overwrites the old texts) when any was.
 */
export function scrubErrors(db: Db, terms: string[]): number {
  db.pragma('secure_delete = ON');
  return db.transaction(() => {
    const update = db.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?');
    const stored = db.prepare('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL').all() as StoredError[];
    let n = 0;
    for (const row of errorsWithout(stored, terms)) n += update.run(row.last_error, row.stream).changes;
    if (n > 0) markPending(db);
    return n;
  })();
}

/**
 * Leaves no byte of the erased rows in the database's files. `secure_delete` zeroes the deleted cells,
 * but earlier page splits left stale copies of cells in other pages' free space; VACUUM rebuilds every
 * page, and the WAL is then checkpointed and truncated. Costs a rewrite of the database (time and
 * free space about its size): an erasure request is rare and must be complete. Clears the pending
 * mark once done (the mark's own deletion touches only the `meta` page).
 *
 * Returns false when another connection keeps it from finishing within the busy timeout: a reader's
 * snapshot pins the old pages (the checkpoint cannot copy the rebuilt ones over them), a writer keeps
 * VACUUM out. The mark then stays, and the next call finishes the work.
 */
export function scrub(db: Db): boolean {
  try {
    db.exec('VACUUM');
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
  if (!truncateWal(db)) return false;
  db.prepare('DELETE FROM meta WHERE key = ?').run(ERASE_PENDING_KEY);
  // Only the meta page is in the log now: a reader arriving meanwhile holds no erased byte.
  truncateWal(db);
  return true;
}

/**
 * Checkpoints the whole WAL into the database and truncates it. TRUNCATE waits for readers (the busy
 * timeout), then reports `busy` rather than failing: the result is the only sign it did not finish.
 */
function truncateWal(db: Db): boolean {
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return r !== undefined && r.busy === 0 && r.log === r.checkpointed;
  } catch (err) {
    if (isBusy(err)) return false;
    throw err;
  }
}

function isBusy(err: unknown): boolean {
  const code = errorCode(err) ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

/**
 * Rewrites one NDJSON file without the user's lines (and without tombstones of their records), and
 * commits its new length and index with the pending rename before the rename. Returns the lines removed.
 */
export function eraseFromFile(db: Db, path: string, committed: number, user: string, found?: Set<string>): number {
  // Its lines are read and its name replaced: never those of a file a link there leads to.
  refuseLinks([path], 'replace it with the file itself');
  if (!existsSync(path)) return 0;
  const size = statSync(path).size;
  if (size < committed)
    throw new NdjsonStateError(
      `${path} holds ${size} bytes but ${committed} were committed: it was changed outside campaign-sync; nothing was erased from it`,
    );
  const keep: string[] = [];
  const theirs = new Set<string>();
  let removed = 0;
  forEachLine(path, committed, (line) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      keep.push(line);
      return;
    }
    const r = (record ?? {}) as Obj;
    if (isUsers(r, user) || (typeof r._deleted_at === 'string' && theirs.has(String(r.id)))) {
      if (typeof r.id === 'string') theirs.add(r.id);
      for (const v of identityOf(r)) found?.add(v);
      removed++;
      return;
    }
    keep.push(line);
  });
  if (removed === 0) return 0;
  const temp = join(dirname(path), `.${basename(path)}.forget-${randomBytes(6).toString('hex')}`);
  const text = keep.length > 0 ? `${keep.join('\n')}\n` : '';
  const fd = openPrivateFile(temp, { exclusive: true });
  try {
    const buf = Buffer.from(text, 'utf8');
    let done = 0;
    while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, done);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(temp);
    throw err;
  }
  closeSync(fd);
  const length = Buffer.byteLength(text);
  const uncount = db.prepare(
    `UPDATE sync_state SET records = max(0, records - 1) WHERE stream = (SELECT ${RECORD_STREAM} FROM ndjson_records n WHERE n.path = ? AND n.id = ? LIMIT 1)`,
  );
  db.transaction(() => {
    db.prepare('UPDATE ndjson_files SET committed_bytes = ? WHERE path = ?').run(length, path);
    const forget = db.prepare('DELETE FROM ndjson_records WHERE path = ? AND id = ?');
    for (const id of theirs) {
      uncount.run(path, id);
      forget.run(path, id);
    }
    markPending(db);
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      REWRITE_KEY + path,
      temp,
    );
  })();
  finishRewrites(db);
  return removed;
}

/**
 * Finishes rewrites a crash interrupted: a committed rewrite whose new file is still beside the old
 * one is renamed into place. Call before opening the NDJSON files (the old file is longer than its
 * new committed length, and would otherwise be cut). Also removes this database's stray rewrite
 * files that never committed.
 */
export function finishRewrites(db: Db): void {
  const pending = db.prepare('SELECT key, value FROM meta WHERE key LIKE ?').all(`${REWRITE_KEY}%`) as Array<{
    key: string;
    value: string;
  }>;
  for (const { key, value: temp } of pending) {
    const path = key.slice(REWRITE_KEY.length);
    try {
      // Renamed into place, a link would replace the file with itself (and the next open refuse it).
      refuseLinks([temp]);
      if (existsSync(temp)) {
        renameSync(temp, path);
        const dir = openSync(dirname(path), 'r');
        try {
          fsyncSync(dir);
        } finally {
          closeSync(dir);
        }
      }
    } catch (err) {
      throw storageError(err, `cannot finish erasing from ${path}`);
    }
    db.prepare('DELETE FROM meta WHERE key = ?').run(key);
  }
}

/** Removes rewrite files of `path` left by a process that died before committing them. */
export function removeStrayRewrites(path: string): void {
  const prefix = `.${basename(path)}.forget-`;
  let names: string[] = [];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(prefix)) unlinkSync(join(dirname(path), name));
}
