/**
 * Records into the PostgreSQL mirror through the Sink port (store/sqlite/grouped-sink.ts). Each page is one
 * transaction (commitOnce): its rows (bulk statements, mirror.ts), its checkpoint's compare-and-set,
 * its quarantined records and its drift commit together, so a kill -9 at any instant loses and
 * duplicates nothing. Each page's transaction first checks that the stream's lease is still this
 * worker's (leases.ts `fence`): a worker that lost it writes nothing more of the stream. Pages of
 * concurrent streams run on connections of their own. A stream is opened under its lease.
 *
 * A stream's pages go through a queue of its own (page-queue.ts): commitPage resolves once the page is
 * under way and the page before it has committed, so the server writes page N+1 while page N commits;
 * a page commits only if the pages before it did, and a failure surfaces at the stream's next
 * commitPage, settle, endStream or the sink's flush.
 *
 * As with SQLite, the first storage failure is final for the process: every later write throws it.
 */
import type { KnownDrift } from '../../core/drift.js';
import type { Redacted } from '../../core/redact.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import { LockedError, StorageError } from '../../errors.js';
import type { UpsertCounts } from '../model/page.js';
import type { PageExtras, PageSink } from '../port.js';
import { upsertCampaigns } from './campaigns.js';
import type { PgCheckpoints } from './checkpoints.js';
import type { PgDatabase } from './database.js';
import { driftGone, recordDrift } from './drift.js';
import type { PgLeases } from './leases.js';
import { PageQueue } from './page-queue.js';
import { applyQuarantine, touchesQuarantine } from './quarantine.js';
import { serverIso, serverNow } from './server-clock.js';
import { CHECKPOINT_CONFLICT, LEASE_LOST } from './statements.js';
import { type PagePlan, planPage, removeResults, storedIds, writePage } from './upserts.js';

export class PgSink implements PageSink {
  private broken: StorageError | undefined;
  private readonly queues = new Map<string, PageQueue>();

  constructor(
    private readonly db: PgDatabase,
    private readonly state: PgCheckpoints,
    /** The stream leases; public as PageSink.leases, which the job hands the pass on a fleet's mirror. */
    readonly leases: PgLeases,
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

  /** The pages of a stream under way (page-queue.ts). */
  private queue(id: StreamId): PageQueue {
    let queue = this.queues.get(id.key);
    if (queue === undefined) this.queues.set(id.key, (queue = new PageQueue()));
    return queue;
  }

  /**
   * Hands the stream's next page to its queue: it is planned now (while the page before may still be
   * committing) and written once the queue lets it. Resolves with the counts of the page before it
   * (page-queue.ts); this page's come with the next call or with settle.
   */
  async commitPage(
    id: StreamId,
    records: CheckedRecord[],
    move: CheckpointMove | undefined,
    extras: PageExtras = {},
  ): Promise<UpsertCounts> {
    if (this.broken) throw this.broken;
    const plan = this.plan(id, records, extras);
    return this.queue(id).push(plan, move, (ticket, before) => this.guard(() => this.commit(id, plan, move, extras, ticket, before)));
  }

  /**
   * A page's rows and parameters (mirror.ts planPage). A page with quarantined records or new drift
   * is not one statement: they are written in its transaction.
   */
  private plan(id: StreamId, records: CheckedRecord[], { quarantine, drift }: PageExtras): PagePlan | undefined {
    if (records.length === 0) return undefined;
    const plan = planPage(id.endpoint, records, id.campaignId, id.reportType ?? 'DETAILED');
    return plan.alone && (drift !== undefined || touchesQuarantine(quarantine)) ? { ...plan, single: false, alone: false } : plan;
  }

  /**
   * Waits for the stream's pages. A failure, thrown here, has reached the stream: its queue goes, so
   * that a later walk of the stream (a lease taken again, after a LeaseLostError) starts a fresh one.
   */
  async settle(id: StreamId): Promise<UpsertCounts> {
    const queue = this.queue(id);
    try {
      return await queue.settle();
    } catch (err) {
      if (this.queues.get(id.key) === queue) this.queues.delete(id.key);
      throw err;
    }
  }

  /**
   * One page: written (commitOnce), written again when that is safe and may succeed, then, in page
   * order, its checkpoint in memory and what is reported of it.
   */
  private async commit(
    id: StreamId,
    plan: PagePlan | undefined,
    move: CheckpointMove | undefined,
    extras: PageExtras,
    ticket: number | undefined,
    before: Promise<unknown> | undefined,
  ): Promise<UpsertCounts> {
    let counts: UpsertCounts;
    try {
      counts = await this.commitOnce(id, plan, move, extras, ticket);
    } catch (err) {
      // Written again, once the page before is in (a failure of that page is thrown instead): a
      // one-statement page chosen as a deadlock's victim, which rolled back whole; or, while the page
      // before was under way, one that ran ahead of it (took its ticket first) or whose wait for it
      // was cut short.
      const again =
        plan?.single === true &&
        (isDeadlock(err) || (move !== undefined && before !== undefined && (isConflict(err) || isLockTimeout(err))));
      if (!again) throw await this.conflictOr(err, id, move);
      if (before !== undefined) await before;
      try {
        counts = await this.commitOnce(id, plan, move, extras, ticket);
      } catch (second) {
        throw await this.conflictOr(second, id, move);
      }
    }
    // This page's compare-and-set found the page before committed, whatever its answer said.
    if (before !== undefined) await before.catch(() => {});
    this.state.moved(id, move);
    return this.recordConflicts(id, counts);
  }

  /**
   * Runs a page as one transaction, the one place a page commits: the lease's fence first (a worker
   * that lost the stream writes nothing of it), then the page's statements and its checkpoint's
   * compare-and-set (or, a page of no records, the checkpoint alone), its quarantined records and its
   * new drift. The fence is a CTE of the page's first statement (statements.ts withCheckpoint,
   * withTicket), which holds the lease row FOR SHARE until the transaction ends: no round trip of its
   * own. A one-statement page (session results with their eval results, or role results without
   * score details, and nothing else to write: the checkpoint is a CTE of it too) is its own
   * transaction, one round trip.
   */
  private async commitOnce(
    id: StreamId,
    plan: PagePlan | undefined,
    move: CheckpointMove | undefined,
    { quarantine, drift, requestId }: PageExtras,
    ticket: number | undefined,
  ): Promise<UpsertCounts> {
    const cp = { stream: id.key, move, ticket, requestId, fence: this.leases.fenceParams(id.key) };
    // The first statement failed on the fence: the lease went, nothing of the page was written.
    const fenced = async (write: () => Promise<UpsertCounts>) => {
      try {
        return await write();
      } catch (err) {
        throw err instanceof Error && err.message.includes(LEASE_LOST) ? this.leases.lost(id.key) : err;
      }
    };
    if (plan?.alone === true) return this.db.session((client) => fenced(() => writePage(client, plan, cp)));
    return this.db.transaction(async (client) => {
      let written: UpsertCounts = { inserted: 0, updated: 0 };
      if (plan === undefined) {
        await this.leases.fence(client, id.key);
        await this.state.advance(client, id, move, 0);
      } else written = await fenced(() => writePage(client, plan, cp));
      if (touchesQuarantine(quarantine)) await applyQuarantine(client, id, quarantine);
      if (drift !== undefined) await recordDrift(client, id.key, drift, await serverIso(client));
      return written;
    });
  }

  /** A compare-and-set refused: the checkpoint another process moved, said as such; else `err`. */
  private async conflictOr(err: unknown, id: StreamId, move: CheckpointMove | undefined): Promise<unknown> {
    return move !== undefined && isConflict(err) ? this.state.conflict(id, move) : err;
  }

  /**
   * After a page committed: its records another campaign holds are recorded once
   * (store/sqlite/conflicts.ts); `counts.conflicts` keeps those seen for the first time. Not in the page's
   * transaction: a crash between the two only reports them again.
   */
  private async recordConflicts(id: StreamId, counts: UpsertCounts): Promise<UpsertCounts> {
    const all = counts.conflicts;
    if (all === undefined || all.length === 0) return counts;
    const r = await this.db.query<{ record_id: string }>(
      `INSERT INTO id_conflicts (stream, record_id, campaign_id, kept_campaign_id, first_seen_at)
        SELECT $1, x.id, $2, x.kept, now() FROM unnest($3::text[], $4::text[]) AS x(id, kept)
        ON CONFLICT (stream, record_id) DO NOTHING RETURNING record_id`,
      [id.key, id.campaignId, all.map((c) => c.id), all.map((c) => c.kept)],
      'cannot write to',
    );
    const fresh = new Set(r.rows.map((row) => row.record_id));
    const reported = all.filter((c) => fresh.has(c.id));
    return { ...counts, conflicts: reported.length === 0 ? undefined : reported };
  }

  async storedIds(id: StreamId): Promise<string[]> {
    await this.queue(id).idle();
    return this.guard(async () => {
      try {
        return await storedIds(this.db.pool, id);
      } catch (err) {
        throw this.db.failure(err, 'cannot read');
      }
    });
  }

  async prune(id: StreamId, recordIds: string[]): Promise<number> {
    await this.queue(id).idle();
    return this.guard(() =>
      this.db.transaction(async (client) => {
        await this.leases.fence(client, id.key);
        const removed = await removeResults(client, id.endpoint, recordIds, await serverIso(client));
        await this.state.advance(client, id, undefined, -removed);
        return removed;
      }),
    );
  }

  async campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void> {
    await this.guard(async () => upsertCampaigns(this.db, list, new Date(await serverNow(this.db)).toISOString(), lister));
  }

  async openStream(id: StreamId): Promise<void> {
    await this.guard(async () => {
      // A pass took the lease already (sync/pass.ts); reconcile takes it here, or stops (exit 75).
      if (!this.leases.holds(id.key) && (await this.leases.claim(id.key, 'infinity')) !== 'taken')
        throw new LockedError(`another campaign-sync is syncing stream ${id.key} of ${this.db.name}; run again once it is done`);
      // Read after the lease is taken: the checkpoint the last holder committed.
      await this.state.open(id);
    });
  }

  async endStream(id: StreamId, error: Redacted | undefined): Promise<void> {
    // The stream's pages first: a failure among them is the one thrown, and the end is recorded after them.
    await this.queue(id).idle();
    await this.guard(() =>
      this.db.transaction(async (client) => {
        await this.leases.fence(client, id.key);
        await this.state.end(id, error, client);
      }),
    );
  }

  async driftGone(id: StreamId, items: KnownDrift[]): Promise<void> {
    await this.guard(async () => driftGone(this.db, id.key, items, new Date(await serverNow(this.db)).toISOString()));
  }

  /** Nothing local to move: the server keeps the mirror. */
  moved(): undefined {
    return undefined;
  }

  /** Every page committed on its own: only the pages under way are waited for. */
  async flush(): Promise<void> {
    for (const queue of this.queues.values()) await queue.idle();
    if (this.broken) throw this.broken;
  }

  /** The pages under way are waited for; their failure was (or will be) reported by the stream. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((queue) => queue.idle()));
  }
}

const isConflict = (err: unknown): boolean => err instanceof Error && err.message.includes(CHECKPOINT_CONFLICT);

/** The role's or database's lock_timeout cut a wait (for the ticket of the page before). */
const isLockTimeout = (err: unknown): boolean => (err as { code?: unknown })?.code === '55P03';

/** The server broke a deadlock by failing this statement (another writer of the same rows). */
const isDeadlock = (err: unknown): boolean => (err as { code?: unknown })?.code === '40P01';
