/**
 * Records as NDJSON lines, exactly once: each page is appended and fsynced, then its file's new
 * length commits with the checkpoint in the group (sinks/sink.ts). Who may touch which file: ../ndjson-file.ts.
 */
import { toJson } from '../../core/json.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import { storageError } from '../../errors.js';
import type { Checkpoints } from '../checkpoints.js';
import type { Db } from '../db.js';
import type { GroupLimits } from '../group.js';
import type { UpsertCounts } from '../mirror.js';
import { NDJSON_FILES, NdjsonFile, openOutputFolder } from '../ndjson-file.js';
import { NdjsonOffsets } from '../offsets.js';
import { GroupedSink } from './sink.js';

/** Test seam: replaces the write of an append (to inject a full disk). */
export interface NdjsonSinkOptions {
  limits?: GroupLimits;
  write?: (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number;
}

/** Records as NDJSON lines, exactly once; the state (checkpoints, offsets) lives in the database. */
export class NdjsonSink extends GroupedSink {
  private readonly files = new Map<keyof typeof NDJSON_FILES, NdjsonFile>();
  private readonly offsets: NdjsonOffsets;

  constructor(db: Db, state: Checkpoints, dir: string, options: NdjsonSinkOptions = {}) {
    super(db, state, options.limits);
    this.offsets = new NdjsonOffsets(db);
    const folder = openOutputFolder(dir);
    try {
      const unclaimed: string[] = [];
      for (const [kind, name] of Object.entries(NDJSON_FILES)) {
        const path = `${folder}/${name}`;
        const committed = this.offsets.committed(path);
        if (committed === undefined) unclaimed.push(path);
        this.files.set(kind as keyof typeof NDJSON_FILES, new NdjsonFile(path, committed, options.write));
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
      this.release();
      throw err;
    }
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
    let end: number;
    try {
      end = file.append(text);
    } catch (err) {
      throw this.group.failWith(err, `cannot write ${file.path}`);
    }
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

  async commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined): Promise<UpsertCounts> {
    this.write(
      id.endpoint,
      records.map((r) => r.raw),
      () => this.state.advance(id, move, records.length),
    );
    return { inserted: records.length, updated: 0 };
  }

  async campaigns(list: Array<Record<string, unknown>>): Promise<void> {
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
        this.campaignRows.upsert(list, seenAt);
      },
    );
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      this.release();
    }
  }

  private release(): void {
    for (const f of this.files.values()) f.close();
    this.files.clear();
  }
}
