/**
 * Records as NDJSON lines, exactly once: each page is appended and fsynced, then its file's new
 * length commits with the checkpoint in the group (store/sqlite/grouped-sink.ts). Who may touch which file:
 * store/sqlite/ndjson/file.ts.
 */
import { lstatSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { NewModes } from '../../../core/fs/modes.js';
import { type FileIdentity, identify, stillAt, whereNow } from '../../../core/fs/moved.js';
import { toJson } from '../../../core/json.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../../../core/types.js';
import { storageError } from '../../../errors.js';
import type { PageExtras } from '../../port.js';
import type { SqliteCheckpoints } from '../checkpoints.js';
import { IdConflicts } from '../conflicts.js';
import type { Db } from '../db.js';
import type { GroupLimits } from '../group-commit.js';
import { GroupedSink, runNow } from '../grouped-sink.js';
import { RunLock } from '../run-lock.js';
import type { UpsertCounts } from '../upserts.js';
import { isTombstone, lineDigest, NdjsonIndex, RECORD_STREAM } from './digest-index.js';
import { finishRewrites } from './erase-lines.js';
import { NDJSON_FILES, NdjsonFile, NdjsonStateError, openOutputFolder } from './file.js';
import { generationOf, isManifestLine, MANIFEST_FILE, ManifestLines } from './manifest.js';
import { NdjsonOffsets } from './offsets.js';

export interface NdjsonSinkOptions {
  limits?: GroupLimits;
  /** Test seam: replaces the write of an append (to inject a full disk). */
  write?: (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number;
  /** The modes of the folder and files this sink creates (private by default); existing ones keep theirs. */
  modes?: NewModes;
}

/** Records as NDJSON lines, exactly once; the state (checkpoints, offsets) lives in the database. */
export class NdjsonSink extends GroupedSink {
  private readonly files = new Map<keyof typeof NDJSON_FILES, NdjsonFile>();
  /** `<out>/_manifest.ndjson`: one line per commit that appended (store/sqlite/ndjson/manifest.ts). */
  private manifest: ManifestLines | undefined;
  private readonly offsets: NdjsonOffsets;
  private readonly index: NdjsonIndex;
  private readonly conflicts: IdConflicts;
  private readonly folderLock: RunLock | undefined;
  /** The folders of --out this run made, top down. */
  private readonly madeFolders: string[];
  /**
   * Set when the run failed: what it made and never committed to (files, the folder's lock, folders)
   * is removed as the sink closes, if nothing at all was committed to the folder's files.
   */
  leaveNothing = false;
  /** The folder and files as opened, for moved() (kept after the files close: checked once more then). */
  private readonly opened: Array<{ path: string; id: FileIdentity; folder: boolean }> = [];
  private movedAtClose: string | undefined;

  constructor(db: Db, state: SqliteCheckpoints, dir: string, options: NdjsonSinkOptions = {}) {
    super(db, state, options.limits);
    this.offsets = new NdjsonOffsets(db);
    this.index = new NdjsonIndex(db);
    this.conflicts = new IdConflicts(db);
    const paths = Object.values(NDJSON_FILES).map((name) => join(resolve(dir), name));
    // A file this database committed to that is gone: said before anything is created, unless a full
    // reset left no checkpoint, when the next lines re-read everything into a new file.
    const gone = paths.filter((path) => (this.offsets.committed(path) ?? 0) > 0 && !exists(path));
    if (gone.length > 0 && state.checkpointCount() > 0) {
      const path = gone[0] as string;
      throw new NdjsonStateError(
        `${path}: ${this.offsets.committed(path)} bytes were committed to it but it is gone; nothing was written (restore it, or run \`campaign-sync reset --all\` with this --db and pull again to write it anew from the start)`,
      );
    }
    // Private (0700, 0600: the defaults of the folder's and the files' opens) unless told otherwise.
    const modes = options.modes;
    const { path: folder, made } = openOutputFolder(dir, modes?.folder);
    this.madeFolders = made;
    // One process at a time in a folder, whatever database it writes from (store/sqlite/run-lock.ts).
    try {
      this.folderLock = RunLock.acquireFolder(folder);
    } catch (err) {
      this.removeMadeFolders();
      throw err;
    }
    try {
      for (const path of gone) if (!exists(path)) dropFile(db, path);
      // A rewrite by `forget` that a crash interrupted is finished before any file is opened (and cut).
      finishRewrites(db);
      const unclaimed: string[] = [];
      for (const [kind, name] of Object.entries(NDJSON_FILES)) {
        const path = `${folder}/${name}`;
        const committed = this.offsets.committed(path);
        if (committed === undefined) unclaimed.push(path);
        this.files.set(
          kind as keyof typeof NDJSON_FILES,
          new NdjsonFile(path, committed, options.write, this.lineCheck(kind, path), modes?.file),
        );
        if (committed !== undefined && kind !== 'campaigns') this.index.ensureIndexed(path, committed, indexKeyOfLine(kind));
      }
      // The manifest is an index of the files, not data: removed by its reader, it starts again empty.
      const manifestPath = `${folder}/${MANIFEST_FILE}`;
      let manifestCommitted = this.offsets.committed(manifestPath);
      if (manifestCommitted === undefined || (manifestCommitted > 0 && !exists(manifestPath))) {
        manifestCommitted = undefined;
        unclaimed.push(manifestPath);
      }
      const manifest = new ManifestLines(new NdjsonFile(manifestPath, manifestCommitted, options.write, isManifestLine, modes?.file), (p) =>
        generationOf(db, p),
      );
      this.manifest = manifest;
      let manifestEnd: number | undefined;
      this.group.setHooks({
        before: () => {
          try {
            manifestEnd = manifest.append(new Date());
          } catch (err) {
            throw this.group.failWith(err, `cannot write ${manifestPath}`);
          }
          if (manifestEnd !== undefined) this.offsets.setCommitted(manifestPath, manifestEnd);
        },
        after: () => {
          if (manifestEnd !== undefined) manifest.committed(manifestEnd);
          manifestEnd = undefined;
        },
        failed: () => {
          manifest.discard();
          manifest.file.rollback();
          manifestEnd = undefined;
        },
      });
      const folderId = identify(folder);
      if (folderId) this.opened.push({ path: folder, id: folderId, folder: true });
      for (const f of [...this.files.values(), manifest.file]) {
        const id = f.identity();
        if (id) this.opened.push({ path: f.path, id, folder: false });
      }
      // A file this database is about to write is claimed (committed length 0) before its first
      // byte: a crash before the first commit then leaves a tail this database can prove is its own.
      if (unclaimed.length > 0) {
        try {
          db.transaction(() => {
            for (const path of unclaimed) this.offsets.setCommitted(path, 0);
          })();
        } catch (err) {
          throw storageError(err, `cannot write to ${db.name}`);
        }
      }
    } catch (err) {
      this.leaveNothing = true;
      this.release();
      throw err;
    }
  }

  /**
   * How a file's last committed line is recognised as this database's: a record's line by the digest
   * the index holds for that record's last line, a campaign's by the line recorded for it; a
   * tombstone, or a line of a file not indexed yet, by being one JSON object.
   */
  private lineCheck(kind: string, path: string): (line: string) => boolean {
    return (line) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return false;
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
      const r = value as Record<string, unknown>;
      if (typeof r.id !== 'string' && typeof r.id !== 'number') return false;
      const id = String(r.id);
      if (kind === 'campaigns') {
        const recorded = this.offsets.campaignLine(path, id);
        return recorded === undefined || recorded === line;
      }
      // A file written before the index existed is indexed after this check, from these lines.
      if (isTombstone(r) || !this.index.isIndexed(path)) return true;
      // The record's last line in this file, under either report (a role file may hold both).
      const digest = lineDigest(line);
      return (kind === 'session' ? ['session'] : ['DETAILED', 'OVERALL']).some((key) => this.index.digest(path, key, id) === digest);
    };
  }

  /**
   * Appends and fsyncs the lines, then records the new length with `commit` in the group: the bytes
   * are on disk before the offset that covers them can commit. A failed append stops the sink.
   */
  private write(kind: keyof typeof NDJSON_FILES, lines: string[], commit: () => void): void {
    const file = this.files.get(kind) as NdjsonFile;
    if (lines.length === 0) {
      this.group.write(commit, 0, 0);
      return;
    }
    if (this.failure) throw this.failure;
    const text = `${lines.join('\n')}\n`;
    const bytes = Buffer.from(text, 'utf8');
    let end: number;
    try {
      end = file.append(bytes);
    } catch (err) {
      throw this.group.failWith(err, `cannot write ${file.path}`);
    }
    // Noted before the write joins the group, which may commit it (and write the manifest's line) at once.
    this.manifest?.note(file.path, file.offset, bytes, lines.length);
    try {
      this.group.write(
        () => {
          commit();
          this.offsets.setCommitted(file.path, end);
        },
        lines.length,
        text.length,
      );
    } catch (err) {
      // The page is not in the database: its bytes must not stay in the file either.
      file.rollback();
      throw err;
    }
    file.offset = end;
  }

  /**
   * Appends the page's records that are new to this file or changed since their last line (a record
   * read again unchanged adds nothing), and moves the checkpoint with the file's new length. A record
   * whose id the file holds for another campaign is that campaign's (store/sqlite/conflicts.ts): no line.
   */
  async commitPage(
    id: StreamId,
    records: CheckedRecord[],
    move: CheckpointMove | undefined,
    { quarantine, drift }: PageExtras = {},
  ): Promise<UpsertCounts> {
    const path = (this.files.get(id.endpoint) as NdjsonFile).path;
    const key = indexKey(id);
    const lines: string[] = [];
    const digests: Array<[string, string]> = [];
    const counts: UpsertCounts = { inserted: 0, updated: 0 };
    for (const r of records) {
      const stored = this.index.entry(path, key, r.id);
      if (stored !== undefined && stored.campaign_id !== id.campaignId) {
        (counts.conflicts ??= []).push({ id: r.id, kept: stored.campaign_id });
        continue;
      }
      const digest = lineDigest(r.raw);
      if (stored?.digest === digest) continue;
      if (stored === undefined) counts.inserted++;
      else counts.updated++;
      lines.push(r.raw);
      digests.push([r.id, digest]);
    }
    const skipped = counts.conflicts;
    counts.conflicts = undefined;
    this.write(id.endpoint, lines, () => {
      for (const [recordId, digest] of digests) this.index.set(path, key, recordId, id.campaignId, digest);
      if (drift !== undefined) this.drift.record(id.key, drift, new Date().toISOString());
      this.state.advance(id, move, counts.inserted);
      counts.conflicts = this.conflicts.record(id, skipped, new Date().toISOString());
      // In the database, with the checkpoint and the file's new length.
      if (quarantine !== undefined) this.quarantine.apply(id, quarantine.add, quarantine.release);
    });
    return counts;
  }

  /**
   * Appends one tombstone line per record the service no longer serves (reconcile --prune) and
   * forgets them, exactly once: the lines and the index commit with the file's new length.
   */
  async prune(id: StreamId, recordIds: string[]): Promise<number> {
    const at = runNow();
    const path = (this.files.get(id.endpoint) as NdjsonFile).path;
    const key = indexKey(id);
    const gone = recordIds.filter((r) => this.index.digest(path, key, r) !== undefined);
    this.write(
      id.endpoint,
      gone.map((r) => toJson({ id: r, campaign_id: id.campaignId, _deleted_at: at })),
      () => {
        for (const r of gone) this.index.remove(path, key, r);
        this.state.advance(id, undefined, -gone.length);
      },
    );
    return gone.length;
  }

  /** The records this folder's file holds for a stream. */
  async storedIds(id: StreamId): Promise<string[]> {
    return this.index.ids((this.files.get(id.endpoint) as NdjsonFile).path, indexKey(id), id.campaignId);
  }

  async campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void> {
    // Campaigns are not paged: a line is appended when a campaign is new to this file or has changed
    // since the line this database last wrote there (not since the shared `campaigns` table changed).
    const path = (this.files.get('campaigns') as NdjsonFile).path;
    const seenAt = new Date().toISOString();
    const changed = list.map((c) => ({ id: String(c.id), raw: toJson(c) })).filter((c) => this.offsets.campaignLine(path, c.id) !== c.raw);
    this.write(
      'campaigns',
      changed.map((c) => c.raw),
      () => {
        for (const c of changed) this.offsets.setCampaignLine(path, c.id, c.raw);
        this.campaignRows.upsert(list, seenAt, lister);
      },
    );
  }

  /**
   * The --out folder or one of its files moved or removed while the process ran: lines appended there
   * went into the moved or unlinked file, and the next run would find the file gone.
   */
  override moved(): string | undefined {
    // Closed: what was found just before (the files' new names can only be read while they are open).
    if (this.files.size === 0) return this.movedAtClose;
    const stop = 'nothing more was written';
    const lost = '(restore it, or run `campaign-sync reset --all` with this --db and pull again to write the files anew)';
    const folder = this.opened.find((o) => o.folder);
    if (folder && !stillAt(folder.path, folder.id)) {
      // Where the folder went: the new name of a file in it.
      const file = this.opened.find((o) => !o.folder);
      const at = file && whereNow(file.id);
      if (at === 'removed')
        return `the NDJSON folder ${folder.path} was removed while it was being synced: the lines written there went with it; ${stop} ${lost}`;
      if (at === undefined)
        return `the NDJSON folder ${folder.path} was moved or removed while it was being synced; ${stop} (move it back to go on)`;
      return `the NDJSON folder ${folder.path} was moved to ${dirname(at)} while it was being synced: its files there hold every committed line; ${stop} (move it back to ${folder.path} to go on)`;
    }
    for (const o of this.opened) {
      if (o.folder || stillAt(o.path, o.id)) continue;
      const at = whereNow(o.id);
      if (at === 'removed') return `${o.path} was removed while it was being synced: the lines written there went with it; ${stop} ${lost}`;
      if (at === undefined) return `${o.path} was moved or removed while it was being synced; ${stop} (move it back to go on)`;
      return `${o.path} was moved to ${at} while it was being synced: it holds every committed line; ${stop} (move it back to go on)`;
    }
    return undefined;
  }

  /** The end of a pass: what it appended is committed, and the next pass's lines take a new run id. */
  override async flush(): Promise<void> {
    await super.flush();
    this.manifest?.nextRun();
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      if (this.files.size > 0) this.movedAtClose = this.moved();
      this.release();
    }
  }

  private release(): void {
    const files = [...this.files.values(), ...(this.manifest ? [this.manifest.file] : [])];
    for (const f of files) f.close();
    this.files.clear();
    // Nothing committed to any file of the folder: the files this run made (empty: the group rolled
    // back what it appended), the folder's lock and the folders it made go. Under the folder's lock,
    // held until the files are gone: no other campaign-sync writes here meanwhile.
    const untouched = this.leaveNothing && files.every((f) => f.offset === 0 && this.committedNothing(f.path));
    if (untouched) for (const f of files) if (f.created) removeIfEmpty(f.path);
    if (untouched) this.folderLock?.discard();
    else this.folderLock?.release();
    if (untouched) this.removeMadeFolders();
  }

  private committedNothing(path: string): boolean {
    try {
      return (this.offsets.committed(path) ?? 0) === 0;
    } catch {
      return false;
    }
  }

  /** The folders this run made, bottom up, each only while empty (rmdir refuses one that is not). */
  private removeMadeFolders(): void {
    for (const folder of [...this.madeFolders].reverse()) {
      try {
        rmdirSync(folder);
      } catch {
        return;
      }
    }
  }
}

/** The index's key for a stream's records: its report type, or `session`. */
function indexKey(id: StreamId): string {
  return id.reportType ?? 'session';
}

/** The same key, for a line of a file written before the index existed. */
function indexKeyOfLine(kind: string): (record: Record<string, unknown>) => string {
  if (kind === 'session') return () => 'session';
  return (record) => (Array.isArray(record.score_details) ? 'DETAILED' : 'OVERALL');
}

/** Removes a file this run made, if it is still empty: never one that holds a byte. */
function removeIfEmpty(path: string): void {
  try {
    if (lstatSync(path).size === 0) rmSync(path);
  } catch {
    // Gone already, or not ours to remove: clutter at worst.
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Forgets what this database wrote to a file that is gone, after a full reset: its committed length,
 * its records' digests and campaign lines, and those records in the streams' counts (the pull that
 * follows re-reads them into the new file and counts them again).
 */
function dropFile(db: Db, path: string): void {
  try {
    db.transaction(() => {
      db.prepare(
        `UPDATE sync_state SET records = max(0, records - (SELECT count(*) FROM ndjson_records n WHERE n.path = ? AND ${RECORD_STREAM} = sync_state.stream))`,
      ).run(path);
      db.prepare('DELETE FROM ndjson_records WHERE path = ?').run(path);
      db.prepare('DELETE FROM ndjson_campaigns WHERE path = ?').run(path);
      db.prepare('DELETE FROM ndjson_files WHERE path = ?').run(path);
    })();
  } catch (err) {
    throw storageError(err, `cannot write to ${db.name}`);
  }
}
