/**
 * Records into the PostgreSQL mirror through the Sink port (store/sinks/sink.ts). Each page is one
 * transaction: its rows (bulk statements, mirror.ts) and its checkpoint's compare-and-set commit
 * together, so a kill -9 at any instant loses and duplicates nothing. A page that is one statement
 * (role results without score details; the checkpoint is a CTE of it) runs without BEGIN/COMMIT. Pages of concurrent streams run
 * on connections of their own. A stream is opened under its advisory lock (lock.ts).
 *
 * As with SQLite, the first storage failure is final for the process: every later write throws it.
 */
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import { StorageError } from '../../errors.js';
import type { UpsertCounts } from '../mirror.js';
import type { Sink } from '../sinks/sink.js';
import { upsertCampaigns } from './campaigns.js';
import type { PgDatabase } from './database.js';
import type { PgLocks } from './lock.js';
import { type PagePlan, planPage, removeResults, storedIds, writePage } from './mirror.js';
import type { PgState } from './state.js';
import { CHECKPOINT_CONFLICT, holdsUnstorable } from './statements.js';

export class PgSink implements Sink {
  private broken: StorageError | undefined;

  constructor(
    private readonly db: PgDatabase,
    private readonly state: PgState,
    private readonly locks: PgLocks,
    /** Where the sink's warnings go (a record with U+0000 or a lone surrogate); none: dropped. */
    private readonly warn: (text: string) => void = () => {},
  ) {}

  get failure(): StorageError | undefined {
    return this.broken;
  }

  /** Runs a write; a storage failure stops every later one. */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    if (this.broken) throw this.broken;
    try {
      return await fn();
    } catch (err) {
      if (err instanceof StorageError) this.broken ??= err;
      throw err;
    }
  }

  /** Builds a page's rows and parameters (mirror.ts planPage) while the previous page commits. */
  prepare(id: StreamId, records: CheckedRecord[]): PagePlan | undefined {
    return records.length === 0 ? undefined : planPage(id.endpoint, records, id.campaignId, id.reportType ?? 'DETAILED');
  }

  async commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined, prepared?: unknown): Promise<UpsertCounts> {
    return this.guard(async () => {
      if (records.length === 0) {
        let moved = () => {};
        await this.db.transaction(async (client) => {
          moved = await this.state.advance(client, id, move, 0);
        });
        moved();
        return { inserted: 0, updated: 0 };
      }
      const cp = { stream: id.key, move };
      // A plan made for this very page by prepare(), else one made now.
      const plan = (prepared as PagePlan | undefined)?.page === records ? (prepared as PagePlan) : (this.prepare(id, records) as PagePlan);
      let counts: UpsertCounts;
      try {
        // Rows without score details are one statement with the checkpoint: atomic without BEGIN/COMMIT.
        counts = plan.single
          ? await this.db.session((client) => writePage(client, plan, cp))
          : await this.db.transaction((client) => writePage(client, plan, cp));
      } catch (err) {
        if (move !== undefined && err instanceof Error && err.message.includes(CHECKPOINT_CONFLICT))
          throw await this.state.conflict(id, move);
        throw err;
      }
      this.state.moved(id, move);
      this.warnNul(id, records);
      return counts;
    });
  }

  /** Not silent: the records of the page whose U+0000 or lone surrogates became U+FFFD (statements.ts). */
  private warnNul(id: StreamId, records: CheckedRecord[]): void {
    const ids = records.filter((r) => holdsUnstorable(r.record)).map((r) => r.id);
    if (ids.length === 0) return;
    const shown = ids.slice(0, 3).join(', ') + (ids.length > 3 ? `, and ${ids.length - 3} more` : '');
    this.warn(
      `stream ${id.key}: ${ids.length === 1 ? 'record' : `${ids.length} records`} ${shown} hold U+0000 or a lone surrogate in a string, which PostgreSQL cannot store: stored with U+FFFD in its place`,
    );
  }

  async storedIds(id: StreamId): Promise<string[]> {
    return this.guard(async () => {
      try {
        return await storedIds(this.db.pool, id);
      } catch (err) {
        throw this.db.failure(err, 'cannot read');
      }
    });
  }

  async prune(id: StreamId, recordIds: string[], _at: string): Promise<number> {
    return this.guard(() =>
      this.db.transaction(async (client) => {
        const removed = await removeResults(client, id.endpoint, recordIds);
        await this.state.advance(client, id, undefined, -removed);
        return removed;
      }),
    );
  }

  async campaigns(list: Array<Record<string, unknown>>): Promise<void> {
    await this.guard(() => upsertCampaigns(this.db, list, new Date().toISOString()));
  }

  async openStream(id: StreamId): Promise<void> {
    await this.guard(async () => {
      await this.locks.acquire(id.key);
      await this.state.open(id);
    });
  }

  async endStream(id: StreamId, error: string | undefined, at: string): Promise<void> {
    await this.guard(() => this.state.end(id, error, at));
  }

  /** Every page committed on its own: nothing is held back. */
  async flush(): Promise<void> {
    if (this.broken) throw this.broken;
  }

  async close(): Promise<void> {}
}
