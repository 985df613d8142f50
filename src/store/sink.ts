/**
 * Where a page goes. Either way, a page's records and the stream's new checkpoint are written
 * together in one savepoint of the current group transaction (store/group.ts): rows into the mirror
 * (sqlite), or "append + fsync the lines, then record the file's new length" (ndjson). A crash at any
 * instant loses nothing committed and duplicates nothing.
 */
import { closeSync, fchmodSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CampaignSyncError, ExitCode } from '../errors.js';
import type { CheckedRecord } from '../sync/records.js';
import type { Db } from './db.js';
import { GroupCommit, type GroupLimits } from './group.js';
import { Mirror, type UpsertCounts } from './mirror.js';
import type { StreamId, SyncState } from './state.js';

export interface Sink {
  /** Writes a page's records and moves the checkpoint (unless `cursor` is undefined), atomically. */
  commitPage(id: StreamId, records: CheckedRecord[], cursor: bigint | undefined): UpsertCounts;
  /** Stores the campaign list (and, for NDJSON, appends new or changed campaigns). */
  campaigns(list: Array<Record<string, unknown>>): void;
  /** Commits what the current group holds (see store/group.ts). */
  flush(): void;
  /** Flushes and releases files; the database stays open. */
  close(): void;
}

/** Records into the SQLite mirror. */
export class SqliteSink implements Sink {
  private readonly mirror: Mirror;
  private readonly group: GroupCommit;

  constructor(
    db: Db,
    private readonly state: SyncState,
    limits?: GroupLimits,
  ) {
    this.mirror = new Mirror(db);
    this.group = new GroupCommit(db, limits);
  }

  commitPage(id: StreamId, records: CheckedRecord[], cursor: bigint | undefined): UpsertCounts {
    return this.group.write(
      () => {
        const counts =
          id.endpoint === 'session'
            ? this.mirror.upsertSessionResults(records, id.campaignId)
            : this.mirror.upsertRoleResults(records, id.campaignId, id.reportType ?? 'DETAILED');
        this.state.advance(id, cursor, counts.inserted);
        return counts;
      },
      records.length,
      rawBytes(records),
    );
  }

  campaigns(list: Array<Record<string, unknown>>): void {
    this.mirror.upsertCampaigns(list, new Date().toISOString());
  }

  flush(): void {
    this.group.commit();
  }

  close(): void {
    this.flush();
  }
}

function rawBytes(records: CheckedRecord[]): number {
  let n = 0;
  for (const r of records) n += r.raw.length;
  return n;
}

export const NDJSON_FILES = { campaigns: 'campaigns.ndjson', session: 'session_results.ndjson', role: 'role_results.ndjson' } as const;

/** The NDJSON folder is out of step with the state in the database: nothing is written. */
export class NdjsonStateError extends CampaignSyncError {
  override readonly name = 'NdjsonStateError';
  constructor(message: string) {
    super(message, ExitCode.usage);
  }
}

/** One append-only NDJSON file whose committed length lives in `ndjson_files`. */
class NdjsonFile {
  private readonly fd: number;
  /** Bytes committed (in the database) so far. */
  offset: number;

  constructor(
    readonly path: string,
    committed: number,
  ) {
    const fd = openSync(path, 'a+', 0o600);
    closeSync(fd);
    this.fd = openSync(path, 'r+');
    fchmodSync(this.fd, 0o600);
    const size = fstatSync(this.fd).size;
    if (size < committed) {
      closeSync(this.fd);
      throw new NdjsonStateError(
        `${path} holds ${size} bytes but ${committed} were committed: it was changed outside campaign-sync; nothing was written (restore it, or start over with a new --out and --db)`,
      );
    }
    // A tail past the committed offset is a crash's partial write: cut it before appending.
    if (size > committed) ftruncateSync(this.fd, committed);
    this.offset = committed;
  }

  /** Appends and fsyncs; returns the offset after the write (not yet committed). */
  append(text: string): number {
    const buf = Buffer.from(text, 'utf8');
    let done = 0;
    while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done, this.offset + done);
    fsyncSync(this.fd);
    return this.offset + buf.length;
  }

  /** Undoes an append whose commit failed. */
  rollback(): void {
    ftruncateSync(this.fd, this.offset);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Records as NDJSON lines, exactly once; the state (checkpoints, offsets) lives in the database. */
export class NdjsonSink implements Sink {
  private readonly files = new Map<keyof typeof NDJSON_FILES, NdjsonFile>();
  private readonly mirror: Mirror;
  private readonly group: GroupCommit;
  private readonly setOffset;

  constructor(
    db: Db,
    private readonly state: SyncState,
    dir: string,
    limits?: GroupLimits,
  ) {
    this.mirror = new Mirror(db);
    this.group = new GroupCommit(db, limits);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new NdjsonStateError(`--out: cannot create ${dir} (${(err as NodeJS.ErrnoException).code})`);
    }
    const committed = db.prepare('SELECT committed_bytes FROM ndjson_files WHERE path = ?').pluck();
    this.setOffset = db.prepare(
      'INSERT INTO ndjson_files (path, committed_bytes) VALUES (?, ?) ON CONFLICT (path) DO UPDATE SET committed_bytes = excluded.committed_bytes',
    );
    try {
      for (const [kind, name] of Object.entries(NDJSON_FILES)) {
        const path = resolve(join(dir, name));
        this.files.set(kind as keyof typeof NDJSON_FILES, new NdjsonFile(path, Number(committed.get(path) ?? 0)));
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Appends and fsyncs the lines, then records the new length with `commit` in the group: the bytes
   * are on disk before the offset that covers them can commit.
   */
  private write(kind: keyof typeof NDJSON_FILES, lines: string[], commit: () => void): void {
    const file = this.files.get(kind) as NdjsonFile;
    if (lines.length === 0) {
      this.group.write(commit, 0, 0);
      return;
    }
    const text = `${lines.join('\n')}\n`;
    const end = file.append(text);
    try {
      this.group.write(
        () => {
          commit();
          this.setOffset.run(file.path, end);
        },
        lines.length,
        text.length,
      );
    } catch (err) {
      file.rollback();
      throw err;
    }
    file.offset = end;
  }

  commitPage(id: StreamId, records: CheckedRecord[], cursor: bigint | undefined): UpsertCounts {
    this.write(
      id.endpoint,
      records.map((r) => r.raw),
      () => this.state.advance(id, cursor, records.length),
    );
    return { inserted: records.length, updated: 0 };
  }

  campaigns(list: Array<Record<string, unknown>>): void {
    // Campaigns are not paged: a line is appended when a campaign is new or has changed.
    const seenAt = new Date().toISOString();
    this.write('campaigns', this.mirror.changedCampaigns(list), () => this.mirror.upsertCampaigns(list, seenAt));
  }

  flush(): void {
    this.group.commit();
  }

  close(): void {
    this.flush();
    for (const f of this.files.values()) f.close();
    this.files.clear();
  }
}
