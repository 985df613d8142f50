/**
 * An erasure from a SQLite database and the NDJSON files it wrote (one candidate's, or the results
 * dated before a retention's cut: store/model/erase-rule.ts), in an order a crash or a full disk
 * cannot turn into a false "done":
 *
 * 1. an erasure left unfinished is finished first (finishErasure);
 * 2. for a candidate, every record (rows and lines) is read once to learn who the person is: every
 *    id and e-mail linked to what forget was given (store/model/person.ts PersonGraph);
 * 3. one transaction deletes and rewrites the rows as the erasure's plan says (erase-rows.ts,
 *    store/model/erasure-plan.ts), scrubs the error texts and the quarantine, and writes the mark of
 *    the erasure (erasure-mark.ts: its rule, a person as keyed digests, and no file done);
 * 4. each NDJSON file is rewritten and marked done (ndjson/erase-lines.ts);
 * 5. the database is rebuilt (VACUUM) and the mark ends.
 *
 * A forget or a pull that finds the mark does 4 and 5 for the files not done, with the rule the
 * mark holds, before anything else.
 */
import { existsSync } from 'node:fs';
import type { ErasedCounts } from '../../core/email.js';
import { refuseLinks } from '../../core/fs/private-file.js';
import { ErasurePlan, foundAny } from '../model/erasure-plan.js';
import { PersonGraph } from '../model/person.js';
import type { ErasureCount, FileErased } from '../port.js';
import type { Db } from './db.js';
import { eraseFromMirror, gatherFromMirror, scrubFreePages } from './erase-rows.js';
import { beginErasure, endErasure, pendingErasure } from './erasure-mark.js';
import { type AfterRename, countInFile, eraseFromFile, finishRewrites, gatherFromFile, pendingRewrites } from './ndjson/erase-lines.js';
import { NdjsonOffsets } from './ndjson/offsets.js';

/** Test seams: a crash after a rename. */
export interface ErasureHooks {
  afterRename?: AfterRename;
}

/** The files that can hold a candidate: every one this database wrote but the campaigns'. */
function resultFiles(db: Db): Array<{ path: string; committed: number }> {
  return new NdjsonOffsets(db).files().filter((f) => !f.path.endsWith('/campaigns.ndjson'));
}

/** Rewrites every file not done yet without what the plan takes. */
function eraseFromFiles(db: Db, plan: ErasurePlan, done: ReadonlySet<string>, hooks: ErasureHooks): FileErased[] {
  const out: FileErased[] = [];
  for (const f of resultFiles(db)) {
    if (done.has(f.path)) continue;
    const r = eraseFromFile(db, f.path, f.committed, plan, hooks.afterRename);
    if (r.lines + r.changed > 0) out.push(r);
  }
  return out;
}

export interface Finished {
  /** There was an unfinished erasure. */
  earlier: boolean;
  /** It is finished (false: another connection kept the rebuild out; the mark stays). */
  done: boolean;
}

/**
 * Finishes an erasure a killed or failed forget (or retention) left: its committed renames, every
 * file it had not done (with the rule its mark holds), the rebuild. Throws (a full disk, a file
 * changed outside) before anything else could run with the records still in a file.
 */
export function finishErasure(db: Db, hooks: ErasureHooks = {}): Finished {
  // A link at one of the NDJSON files is refused before anything is erased anywhere.
  refuseLinks(
    new NdjsonOffsets(db).files().map((f) => f.path),
    'replace it with the file itself',
  );
  finishRewrites(db, hooks.afterRename);
  const pending = pendingErasure(db);
  if (pending === undefined) return { earlier: false, done: true };
  if (pending.rule !== undefined) eraseFromFiles(db, ErasurePlan.ofRule(pending.rule), pending.done, hooks);
  return { earlier: true, done: scrubFreePages(db) };
}

export interface Erasure {
  rows: ErasedCounts;
  /** Rows removed from each table of copies that had any (store/model/erase-tables.ts). */
  copies: Record<string, number>;
  files: FileErased[];
  /** An erasure left unfinished was finished first. */
  earlier: boolean;
  /** Whether anything was found (rows, lines, error texts). */
  found: boolean;
  /** The rebuild finished (false: another connection kept it out; the mark stays for the next run). */
  done: boolean;
}

/** Erases the person `user` (an id or an e-mail) names, from the tables and the files. */
export function eraseCandidate(db: Db, user: string, hooks: ErasureHooks = {}): Erasure {
  // Finished first: its files are done before this one's mark takes its place (its rebuild, if a
  // reader kept it out, is this one's).
  const first = finishErasure(db, hooks);
  const graph = new PersonGraph();
  gatherFromMirror(db, graph);
  for (const f of resultFiles(db)) gatherFromFile(f.path, f.committed, graph);
  return erase(db, ErasurePlan.forPerson(user, graph.find(user)), first, hooks);
}

/**
 * Erases the results dated before `before` (ms since the epoch; store/model/erase-rule.ts says what
 * a record's date is), with their score details, eval results, copies and NDJSON lines.
 */
export function eraseOlderThan(db: Db, before: number, hooks: ErasureHooks = {}): Erasure {
  const first = finishErasure(db, hooks);
  return erase(db, ErasurePlan.olderThan(before), first, hooks);
}

/**
 * Counts what eraseOlderThan(db, before) erases, changing nothing: the same plan over the same rows
 * (erase-rows.ts in its counting mode, in one read transaction) and the same lines of the same files.
 * Under the run lock the count holds until the erasure runs. A file whose rewrite an earlier forget
 * committed but did not rename yet is counted in its new text, as the erasure will find it.
 */
export function countOlderThan(db: Db, before: number): ErasureCount {
  const plan = ErasurePlan.olderThan(before);
  const { copies, ...rows } = db.transaction(() => eraseFromMirror(db, plan, true))();
  const rewrites = pendingRewrites(db);
  const files: FileErased[] = [];
  for (const f of resultFiles(db)) {
    const renamed = rewrites.get(f.path);
    const r = countInFile(renamed !== undefined && existsSync(renamed) ? renamed : f.path, f.committed, plan);
    if (r.lines + r.changed > 0) files.push({ ...r, path: f.path });
  }
  return { rows, copies, files, earlier: pendingErasure(db) !== undefined || rewrites.size > 0 };
}

/**
 * The erasure of a plan, once an earlier one is finished (`first`): one transaction deletes and
 * rewrites the rows, the copies, the quarantine and the error texts (erase-rows.ts) and writes the
 * mark; then each file is rewritten, then the database rebuilt.
 */
function erase(db: Db, plan: ErasurePlan, first: Finished, hooks: ErasureHooks): Erasure {
  // Deleted cells are overwritten with zeros, not left in the pages.
  db.pragma('secure_delete = ON');
  const { rows, copies } = db.transaction(() => {
    const { copies, ...rows } = eraseFromMirror(db, plan);
    beginErasure(db, plan.person, plan.rule.before);
    return { rows, copies };
  })();
  const files = eraseFromFiles(db, plan, new Set(), hooks);
  const found = foundAny(rows, copies, files.length);
  if (!found) {
    // Nothing changed: no rebuild to do, the mark goes (secure_delete is on), unless the earlier
    // erasure's rebuild is still to do.
    if (first.done) endErasure(db);
    return { rows, copies, files, earlier: first.earlier, found, done: first.done };
  }
  return { rows, copies, files, earlier: first.earlier, found, done: scrubFreePages(db) };
}
