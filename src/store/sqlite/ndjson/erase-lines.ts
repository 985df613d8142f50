/**
 * Erasing from the NDJSON files a database wrote what an erasure's plan takes (store/model/erasure-plan.ts):
 * one candidate, or the records dated before a cut. A file is rewritten without those lines, and with
 * other candidates' lines that held the candidate rewritten without them (store/model/person.ts),
 * into a new file that replaces it by rename. The file's new committed length, its index and the
 * pending rename are committed first, with the file marked done in the erasure's mark
 * (erase-pending.ts), so a crash at any instant leaves either the old file with its old length or a
 * rename the next open finishes (`finishRewrites`), never a file the database would cut, and never
 * a file left undone that the mark calls done.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fchownSync, fsyncSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { openPrivateFile, refuseLinks } from '../../../core/fs/private-file.js';
import { parseJson } from '../../../core/json.js';
import { storageError } from '../../../errors.js';
import type { ErasurePlan } from '../../model/erasure-plan.js';
import type { PersonGraph } from '../../model/person.js';
import type { FileErased } from '../../port.js';
import type { Db } from '../db.js';
import { forgetDriftExamples } from '../drift-ledger.js';
import { fileDone } from '../erasure-mark.js';
import { forEachLine, isTombstone, lineDigest, RECORD_STREAM } from './digest-index.js';
import { NdjsonFile, NdjsonStateError } from './file.js';
import { generationOf, isManifestLine, MANIFEST_FILE, rewriteLine, setGeneration } from './manifest.js';
import { NdjsonOffsets } from './offsets.js';

const REWRITE_KEY = 'ndjson_rewrite:';

/** Runs after each rename of a rewritten file into place: a test's seam to crash there. */
export type AfterRename = (path: string) => void;

function parsed(line: string): unknown {
  try {
    return parseJson(line);
  } catch {
    return undefined;
  }
}

/** Feeds every committed line of a file to the graph that tells who is who. */
export function gatherFromFile(path: string, committed: number, graph: PersonGraph): void {
  if (!existsSync(path)) return;
  try {
    forEachLine(path, committed, (line) => graph.add(parsed(line)));
  } catch (err) {
    throw storageError(err, `cannot read ${path} to erase a candidate from it`);
  }
}

/** What the plan does to a file's committed lines, read once. */
interface FileWalk {
  /** The lines kept, rewritten ones with their new text (collected only for a rewrite). */
  keep: string[];
  /** The index's entry of a record is its last line's digest: one removed leaves the index, one rewritten moves it. */
  removed: Array<{ id: string; digest: string }>;
  moved: Array<{ id: string; from: string; to: string }>;
  lines: number;
  changed: number;
}

/**
 * Walks a file's committed lines with the plan: the one reading that both the rewrite and the count
 * of `forget --dry-run` use, so the count says what the rewrite does. `keepLines` false: the kept
 * lines are not collected (a count holds no file in memory).
 */
function walkFile(path: string, committed: number, plan: ErasurePlan, keepLines: boolean): FileWalk {
  const size = statSync(path).size;
  if (size < committed)
    throw new NdjsonStateError(
      `${path} holds ${size} bytes but ${committed} were committed: it was changed outside campaign-sync; nothing was erased from it (restore it, then run \`campaign-sync forget\` again)`,
    );
  const w: FileWalk = { keep: [], removed: [], moved: [], lines: 0, changed: 0 };
  const keep = (line: string) => {
    if (keepLines) w.keep.push(line);
  };
  // Per record id, whether its last line so far was removed: its tombstone goes with it.
  const lastRemoved = new Map<string, boolean>();
  try {
    forEachLine(path, committed, (line) => {
      const record = parsed(line);
      const r = (record !== null && typeof record === 'object' ? record : {}) as Record<string, unknown>;
      const id = typeof r.id === 'string' || typeof r.id === 'number' ? String(r.id) : undefined;
      if (isTombstone(r)) {
        if (id !== undefined && lastRemoved.get(id) === true) {
          w.lines++;
          return;
        }
        keep(line);
        return;
      }
      const f = plan.line(record);
      if (id !== undefined) lastRemoved.set(id, f.do === 'delete');
      if (f.do === 'delete') {
        w.lines++;
        if (id !== undefined && keepLines) w.removed.push({ id, digest: lineDigest(line) });
        return;
      }
      if (f.do === 'rewrite') {
        const text = f.text;
        w.changed++;
        if (id !== undefined && keepLines) w.moved.push({ id, from: lineDigest(line), to: lineDigest(text) });
        keep(text);
        return;
      }
      keep(line);
    });
  } catch (err) {
    throw storageError(err, `cannot read ${path} to erase from it`);
  }
  return w;
}

/**
 * What eraseFromFile would remove and rewrite in one file, changing nothing (`forget --dry-run`, and
 * forget's question): the same walk of the same committed lines.
 */
export function countInFile(path: string, committed: number, plan: ErasurePlan): FileErased {
  refuseLinks([path], 'replace it with the file itself');
  if (!existsSync(path)) return { path, lines: 0, changed: 0 };
  const { lines, changed } = walkFile(path, committed, plan, false);
  return { path, lines, changed };
}

/**
 * Rewrites one file without what the plan takes and commits its new length and index, marked done, with the
 * pending rename; then renames it into place. Returns what changed (nothing: the file is left as it
 * is, and marked done).
 */
export function eraseFromFile(db: Db, path: string, committed: number, plan: ErasurePlan, afterRename?: AfterRename): FileErased {
  const none = { path, lines: 0, changed: 0 };
  // Its lines are read and its name replaced: never those of a file a link there leads to.
  refuseLinks([path], 'replace it with the file itself');
  if (!existsSync(path)) {
    db.transaction(() => fileDone(db, path))();
    return none;
  }
  const { mode, uid, gid } = statSync(path);
  const { keep, removed, moved, lines, changed } = walkFile(path, committed, plan, true);
  if (lines + changed === 0) {
    db.transaction(() => fileDone(db, path))();
    return none;
  }
  removeStrayRewrites(path);
  const temp = join(dirname(path), `.${basename(path)}.forget-${randomBytes(6).toString('hex')}`);
  const text = keep.length > 0 ? `${keep.join('\n')}\n` : '';
  const buf = Buffer.from(text, 'utf8');
  try {
    // The rewrite takes the file's place with the file's mode: a group of readers the operator gave it keeps reading.
    const fd = openPrivateFile(temp, { exclusive: true, mode: mode & 0o777 });
    try {
      // And with its owner and group, where this process may give them (its own, or root's rights):
      // a group of readers keeps reading whatever group a new file would get.
      if (uid !== process.getuid?.() || gid !== process.getgid?.()) {
        try {
          fchownSync(fd, uid, gid);
        } catch {
          // Not ours to give (EPERM): the file is ours, with our group, and its mode.
        }
      }
      let done = 0;
      while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, done);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    try {
      unlinkSync(temp);
    } catch {
      // Not created, or gone: removeStrayRewrites takes what is left.
    }
    throw storageError(
      err,
      `forget: cannot rewrite ${path} without the erased records (the erasure stays pending: the next pull or forget finishes it)`,
    );
  }
  const manifest = noteRewrite(db, path, plan.reason, buf, keep.length);
  const stream = db.prepare(`SELECT ${RECORD_STREAM} FROM ndjson_records n WHERE n.path = ? AND n.id = ? AND n.digest = ?`).pluck();
  const uncount = db.prepare('UPDATE sync_state SET records = max(0, records - 1) WHERE stream = ?');
  const forget = db.prepare('DELETE FROM ndjson_records WHERE path = ? AND id = ? AND digest = ?');
  const move = db.prepare('UPDATE ndjson_records SET digest = ? WHERE path = ? AND id = ? AND digest = ?');
  db.transaction(() => {
    db.prepare('UPDATE ndjson_files SET committed_bytes = ? WHERE path = ?').run(buf.length, path);
    if (manifest !== undefined) {
      new NdjsonOffsets(db).setCommitted(manifest.path, manifest.end);
      setGeneration(db, path, manifest.generation);
    }
    for (const { id, digest } of removed) {
      for (const s of stream.all(path, id, digest) as string[]) uncount.run(s);
      forget.run(path, id, digest);
    }
    forgetDriftExamples(
      db,
      removed.map((r) => r.id),
    );
    for (const m of moved) move.run(m.to, path, m.id, m.from);
    fileDone(db, path);
    db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
      REWRITE_KEY + path,
      temp,
    );
  })();
  finishRewrites(db, afterRename);
  return { path, lines, changed };
}

/** The rewrites committed but not renamed into place yet: each file's path and its new text's file. */
export function pendingRewrites(db: Db): Map<string, string> {
  const rows = db.prepare('SELECT key, value FROM meta WHERE key LIKE ?').all(`${REWRITE_KEY}%`) as Array<{ key: string; value: string }>;
  return new Map(rows.map((r) => [r.key.slice(REWRITE_KEY.length), r.value]));
}

/**
 * Appends (and fsyncs) the manifest's line for the rewrite of `path` into `bytes`, when the folder's
 * manifest is this database's (store/sqlite/ndjson/manifest.ts): the file's next generation, whole.
 * Returns the manifest's new length, committed by the caller with the file's; a crash before that
 * commit leaves a tail the next open cuts, and the erasure, still pending, appends it again.
 */
function noteRewrite(
  db: Db,
  path: string,
  reason: string,
  bytes: Buffer,
  lines: number,
): { path: string; end: number; generation: number } | undefined {
  const manifestPath = join(dirname(path), MANIFEST_FILE);
  const committed = new NdjsonOffsets(db).committed(manifestPath);
  if (committed === undefined || !existsSync(manifestPath)) return undefined;
  const generation = generationOf(db, path) + 1;
  try {
    const file = new NdjsonFile(manifestPath, committed, undefined, isManifestLine);
    try {
      const end = file.append(rewriteLine(path, generation, reason, bytes, lines, new Date()));
      return { path: manifestPath, end, generation };
    } finally {
      file.close();
    }
  } catch (err) {
    throw storageError(err, `forget: cannot append to ${manifestPath} (the erasure stays pending: the next pull or forget finishes it)`);
  }
}

/**
 * Finishes rewrites a crash interrupted: a committed rewrite whose new file is still beside the old
 * one is renamed into place. Call before opening the NDJSON files (the old file is longer than its
 * new committed length, and would otherwise be cut).
 */
export function finishRewrites(db: Db, afterRename?: AfterRename): void {
  const pending = db.prepare('SELECT key, value FROM meta WHERE key LIKE ?').all(`${REWRITE_KEY}%`) as Array<{
    key: string;
    value: string;
  }>;
  for (const { key, value: temp } of pending) {
    const path = key.slice(REWRITE_KEY.length);
    // Renamed into place, a link would replace the file with itself (and the next open refuse it).
    refuseLinks([temp]);
    try {
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
    afterRename?.(path);
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
