/** Records into the SQLite mirror, through the group commit of the Sink port (store/sqlite/grouped-sink.ts). */
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import type { PageExtras } from '../port.js';
import type { SqliteCheckpoints } from './checkpoints.js';
import { IdConflicts } from './conflicts.js';
import type { Db } from './db.js';
import type { GroupLimits } from './group-commit.js';
import { GroupedSink, runNow } from './grouped-sink.js';
import { SqliteUpserts, type UpsertCounts } from './upserts.js';

/** Records into the SQLite mirror. */
export class SqliteSink extends GroupedSink {
  // Only this sink writes the mirror's tables: the NDJSON sink prepares none of their statements.
  private readonly mirror: SqliteUpserts;
  private readonly conflicts: IdConflicts;

  constructor(db: Db, state: SqliteCheckpoints, limits?: GroupLimits) {
    super(db, state, limits);
    this.mirror = new SqliteUpserts(db);
    this.conflicts = new IdConflicts(db);
  }

  async commitPage(
    id: StreamId,
    records: CheckedRecord[],
    move: CheckpointMove | undefined,
    { quarantine, drift, requestId }: PageExtras = {},
  ): Promise<UpsertCounts> {
    return this.group.write(
      () => {
        if (drift !== undefined) this.drift.record(id.key, drift, new Date().toISOString());
        const counts =
          id.endpoint === 'session'
            ? this.mirror.upsertSessionResults(records, id.campaignId, requestId)
            : this.mirror.upsertRoleResults(records, id.campaignId, id.reportType ?? 'DETAILED', requestId);
        this.state.advance(id, move, counts.inserted);
        counts.conflicts = this.conflicts.record(id, counts.conflicts, new Date().toISOString());
        if (quarantine !== undefined) this.quarantine.apply(id, quarantine.add, quarantine.release);
        return counts;
      },
      records.length,
      () => this.mirror.takeBytes(),
    );
  }

  async storedIds(id: StreamId): Promise<string[]> {
    return this.mirror.ids(id);
  }

  async prune(id: StreamId, recordIds: string[]): Promise<number> {
    const at = runNow();
    return this.group.write(
      () => {
        const removed = this.mirror.remove(id.endpoint, recordIds, at);
        this.state.advance(id, undefined, -removed);
        return removed;
      },
      recordIds.length,
      0,
    );
  }

  async campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void> {
    const seenAt = new Date().toISOString();
    this.group.write(() => this.campaignRows.upsert(list, seenAt, lister), 0, 0);
  }
}
