/**
 * Where a page goes: the Sink port, asynchronous so that a store over the network (PostgreSQL) can
 * implement it; the SQLite and NDJSON sinks do their work synchronously inside it. Either way, a page's records and the stream's new checkpoint are written
 * together in the current group transaction (store/group.ts): rows into the mirror
 * (sqlite), or "append + fsync the lines, then record the file's new length" (ndjson). A crash at any
 * instant loses nothing committed and duplicates nothing.
 *
 * Every write of a sync (pages, stream rows and outcomes, campaigns) goes through the group, so after
 * one failed write or commit the process writes nothing more: each later call throws that failure.
 */
import type { DriftPage, KnownDrift } from '../../core/drift.js';
import type { Redacted } from '../../core/redact.js';
import type { CheckedRecord, CheckpointMove, PageQuarantine, StreamId } from '../../core/types.js';
import type { StorageError } from '../../errors.js';
import { Campaigns } from '../campaigns.js';
import type { Checkpoints } from '../checkpoints.js';
import type { Db } from '../db.js';
import { DriftLedger } from '../drift.js';
import { GroupCommit, type GroupLimits } from '../group.js';
import type { UpsertCounts } from '../mirror.js';
import type { StreamLeases } from '../model/stream-leases.js';
import { SqliteQuarantine } from '../quarantine.js';

/** Where the sync engine reads a stream's committed checkpoint (SQLite: Checkpoints; PostgreSQL: pg/state.ts). */
export interface Cursors {
  cursor(id: StreamId): bigint | undefined;
}

/** What a page's commit writes besides its records, in the same transaction. */
export interface PageExtras {
  /** Records that failed the record rules, and quarantined ones a retry stored (store/quarantine.ts). */
  quarantine?: PageQuarantine | undefined;
  /** The field paths and enumeration values new to the stream (sync/drift.ts). */
  drift?: DriftPage | undefined;
  /** The page's request id (its answer's `x-request-id` header), kept with the versions the page brings. */
  requestId?: string | undefined;
}

export interface Sink {
  /**
   * Writes a page's records and moves the checkpoint (a compare-and-set, unless `move` is undefined),
   * atomically. A stream hands its pages in order, each once the call for the page before resolved.
   * The sink commits them in that order, each only if the pages before it committed. It may resolve
   * while the page is still under way (PostgreSQL writes it while the page before commits): a
   * failure then surfaces at the stream's next commitPage or settle (or at endStream, flush).
   * Resolves with the counts of the stream's pages whose commit ended since its last commitPage or
   * settle (this page's, when it is written before this resolves). `extras` are written in the same
   * transaction: the page's records that failed the record rules and quarantined ones a retry stored
   * (store/quarantine.ts), and the field paths and values new to the stream (sync/drift.ts).
   */
  commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined, extras?: PageExtras): Promise<UpsertCounts>;
  /**
   * Waits until every page of the stream handed to commitPage has committed. Resolves with the counts
   * not yet returned; throws the failure of a page that did not commit.
   */
  settle(id: StreamId): Promise<UpsertCounts>;
  /** Marks the paths and values a full read of the stream no longer carried (sync/drift.ts). */
  driftGone?(id: StreamId, items: KnownDrift[], at: string): Promise<void>;
  /** The ids of the records this destination holds for a stream (reconcile). */
  storedIds(id: StreamId): Promise<string[]>;
  /**
   * Removes records the service no longer serves (reconcile --prune): deleted from the mirror with
   * their child rows, or one tombstone line each in NDJSON. Returns how many were removed.
   */
  prune(id: StreamId, recordIds: string[], at: string): Promise<number>;
  /** Stores the campaign list (and, for NDJSON, appends the campaigns new or changed for this folder). */
  campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void>;
  /** Makes sure the stream has its row in `sync_state`. */
  openStream(id: StreamId): Promise<void>;
  /** Records how the stream's pass ended: a success time, or the error (without the key: it is stored and shown). */
  endStream(id: StreamId, error: Redacted | undefined, at: string): Promise<void>;
  /** Commits what the current group holds (see store/group.ts). */
  flush(): Promise<void>;
  /** Flushes and releases files; the database stays open. After a storage failure, only releases. */
  close(): Promise<void>;
  /**
   * Optional: a line saying which of the sink's own files or folders is no longer where it was
   * opened (moved or removed while the process ran), or undefined while all are in place.
   */
  moved?(): string | undefined;
  /** The storage failure that stopped this sink's writes, if one did. */
  readonly failure: StorageError | undefined;
  /** Optional: the stream leases of a mirror several workers sync (PostgreSQL); the pass takes each stream by one. */
  readonly leases?: StreamLeases | undefined;
}

/** What both sinks share: the group every write goes through, and the stream rows. */
export abstract class GroupedSink implements Sink {
  protected readonly group: GroupCommit;
  protected readonly campaignRows: Campaigns;
  protected readonly quarantine: SqliteQuarantine;
  protected readonly drift: DriftLedger;

  constructor(
    db: Db,
    protected readonly state: Checkpoints,
    limits?: GroupLimits,
  ) {
    this.group = new GroupCommit(db, limits);
    this.campaignRows = new Campaigns(db);
    this.quarantine = new SqliteQuarantine(db);
    this.drift = new DriftLedger(db);
  }

  abstract commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined, extras?: PageExtras): Promise<UpsertCounts>;
  abstract campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void>;
  abstract storedIds(id: StreamId): Promise<string[]>;
  abstract prune(id: StreamId, recordIds: string[], at: string): Promise<number>;

  get failure(): StorageError | undefined {
    return this.group.failure;
  }

  /** Each page is written into the group inside commitPage: none is left under way. */
  async settle(_id: StreamId): Promise<UpsertCounts> {
    if (this.failure) throw this.failure;
    return { inserted: 0, updated: 0 };
  }

  async openStream(id: StreamId): Promise<void> {
    this.group.write(() => this.state.ensure(id), 0, 0);
  }

  async endStream(id: StreamId, error: Redacted | undefined, at: string): Promise<void> {
    this.group.write(() => (error === undefined ? this.state.success(id, at) : this.state.failure(id, error, at)), 0, 0);
  }

  async driftGone(id: StreamId, items: KnownDrift[], at: string): Promise<void> {
    this.group.write(() => this.drift.gone(id.key, items, at), 0, 0);
  }

  async flush(): Promise<void> {
    this.group.commit();
  }

  async close(): Promise<void> {
    // After a storage failure there is nothing left to commit, and the failure was already reported.
    if (!this.failure) this.group.commit();
  }
}
