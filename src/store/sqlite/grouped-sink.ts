/**
 * Where a page goes: the Sink port, asynchronous so that a store over the network (PostgreSQL) can
 * implement it; the SQLite and NDJSON sinks do their work synchronously inside it. Either way, a page's records and the stream's new checkpoint are written
 * together in the current group transaction (store/sqlite/group-commit.ts): rows into the mirror
 * (sqlite), or "append + fsync the lines, then record the file's new length" (ndjson). A crash at any
 * instant loses nothing committed and duplicates nothing.
 *
 * Every write of a sync (pages, stream rows and outcomes, campaigns) goes through the group, so after
 * one failed write or commit the process writes nothing more: each later call throws that failure.
 */
import type { KnownDrift } from '../../core/drift.js';
import { currentClock } from '../../core/io.js';
import type { Redacted } from '../../core/redact.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import type { StorageError } from '../../errors.js';
import type { StreamLeases } from '../model/stream-leases.js';
import type { PageExtras, PageSink } from '../port.js';
import { Campaigns } from './campaigns.js';
import type { SqliteCheckpoints } from './checkpoints.js';
import type { Db } from './db.js';
import { DriftLedger } from './drift-ledger.js';
import { GroupCommit, type GroupLimits } from './group-commit.js';
import { SqliteQuarantine } from './quarantine.js';
import type { UpsertCounts } from './upserts.js';

/**
 * Now on the run's clock (core/io.ts currentClock), as ISO 8601: what a SQLite mirror's times are
 * stamped with, the clock its ages are judged by (store/port.ts JobStore.now; one host).
 */
export const runNow = (): string => new Date(currentClock().now()).toISOString();

/**
 * A lone worker's leases (a SQLite mirror has no fleet: capabilities.fleet): its run lock keeps every
 * other process out, so each stream is its own at once.
 */
const LONE_WORKER: StreamLeases = {
  begin: async () => '',
  claim: async () => 'taken',
  release: async () => {},
  retryMs: 0,
};

/** What both sinks share: the group every write goes through, and the stream rows. */
export abstract class GroupedSink implements PageSink {
  protected readonly group: GroupCommit;
  protected readonly campaignRows: Campaigns;
  protected readonly quarantine: SqliteQuarantine;
  protected readonly drift: DriftLedger;
  readonly leases: StreamLeases = LONE_WORKER;

  constructor(
    db: Db,
    protected readonly state: SqliteCheckpoints,
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
  abstract prune(id: StreamId, recordIds: string[]): Promise<number>;

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

  /** At the run's clock, the one its ages are judged by: one host syncs a SQLite mirror (store/port.ts JobStore.now). */
  async endStream(id: StreamId, error: Redacted | undefined): Promise<void> {
    const at = runNow();
    this.group.write(() => (error === undefined ? this.state.success(id, at) : this.state.failure(id, error, at)), 0, 0);
  }

  async driftGone(id: StreamId, items: KnownDrift[]): Promise<void> {
    const at = runNow();
    this.group.write(() => this.drift.gone(id.key, items, at), 0, 0);
  }

  /** The SQLite sink keeps no files of its own (the database is store/sqlite/mirror-guard.ts's). */
  moved(): string | undefined {
    return undefined;
  }

  async flush(): Promise<void> {
    this.group.commit();
  }

  async close(): Promise<void> {
    // After a storage failure there is nothing left to commit, and the failure was already reported.
    if (!this.failure) this.group.commit();
  }
}
