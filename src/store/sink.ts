/**
 * Where a page goes: the Sink port, asynchronous so that a store over the network (PostgreSQL) can
 * implement it; the SQLite and NDJSON sinks do their work synchronously inside it. Either way, a page's records and the stream's new checkpoint are written
 * together in one savepoint of the current group transaction (store/group.ts): rows into the mirror
 * (sqlite), or "append + fsync the lines, then record the file's new length" (ndjson). A crash at any
 * instant loses nothing committed and duplicates nothing.
 *
 * Every write of a sync (pages, stream rows and outcomes, campaigns) goes through the group, so after
 * one failed write or commit the process writes nothing more: each later call throws that failure.
 */
import { toJson } from '../core/json.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../core/types.js';
import { type StorageError, storageError } from '../errors.js';
import { Campaigns } from './campaigns.js';
import type { Checkpoints } from './checkpoints.js';
import type { Db } from './db.js';
import { GroupCommit, type GroupLimits } from './group.js';
import { Mirror, type UpsertCounts } from './mirror.js';
import { NDJSON_FILES, NdjsonFile, NdjsonStateError, openOutputFolder } from './ndjson-file.js';
import { NdjsonOffsets } from './offsets.js';

export { NDJSON_FILES, NdjsonStateError };

export interface Sink {
  /** Writes a page's records and moves the checkpoint (a compare-and-set, unless `move` is undefined), atomically. */
  commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined): Promise<UpsertCounts>;
  /** Stores the campaign list (and, for NDJSON, appends the campaigns new or changed for this folder). */
  campaigns(list: Array<Record<string, unknown>>): Promise<void>;
  /** Makes sure the stream has its row in `sync_state`. */
  openStream(id: StreamId): Promise<void>;
  /** Records how the stream's pass ended: a success time, or the error. */
  endStream(id: StreamId, error: string | undefined, at: string): Promise<void>;
  /** Commits what the current group holds (see store/group.ts). */
  flush(): Promise<void>;
  /** Flushes and releases files; the database stays open. After a storage failure, only releases. */
  close(): Promise<void>;
  /** The storage failure that stopped this sink's writes, if one did. */
  readonly failure: StorageError | undefined;
}

/** What both sinks share: the group every write goes through, and the stream rows. */
abstract class GroupedSink implements Sink {
  protected readonly group: GroupCommit;
  protected readonly mirror: Mirror;
  protected readonly campaignRows: Campaigns;

  constructor(
    db: Db,
    protected readonly state: Checkpoints,
    limits?: GroupLimits,
  ) {
    this.group = new GroupCommit(db, limits);
    this.mirror = new Mirror(db);
    this.campaignRows = new Campaigns(db);
  }

  abstract commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined): Promise<UpsertCounts>;
  abstract campaigns(list: Array<Record<string, unknown>>): Promise<void>;

  get failure(): StorageError | undefined {
    return this.group.failure;
  }

  async openStream(id: StreamId): Promise<void> {
    this.group.write(() => this.state.ensure(id), 0, 0);
  }

  async endStream(id: StreamId, error: string | undefined, at: string): Promise<void> {
    this.group.write(() => (error === undefined ? this.state.success(id, at) : this.state.failure(id, error, at)), 0, 0);
  }

  async flush(): Promise<void> {
    this.group.commit();
  }

  async close(): Promise<void> {
    // After a storage failure there is nothing left to commit, and the failure was already reported.
    if (!this.failure) this.group.commit();
  }
}

/** Records into the SQLite mirror. */
export class SqliteSink extends GroupedSink {
  async commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined): Promise<UpsertCounts> {
    return this.group.write(
      () => {
        const counts =
          id.endpoint === 'session'
            ? this.mirror.upsertSessionResults(records, id.campaignId)
            : this.mirror.upsertRoleResults(records, id.campaignId, id.reportType ?? 'DETAILED');
        this.state.advance(id, move, counts.inserted);
        return counts;
      },
      records.length,
      rawBytes(records),
    );
  }

  async campaigns(list: Array<Record<string, unknown>>): Promise<void> {
    const seenAt = new Date().toISOString();
    this.group.write(() => this.campaignRows.upsert(list, seenAt), 0, 0);
  }
}

function rawBytes(records: CheckedRecord[]): number {
  let n = 0;
  for (const r of records) n += r.raw.length;
  return n;
}

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
