/**
 * Records into the PostgreSQL mirror through the Sink port (store/sinks/sink.ts). Each page is one
 * transaction: its rows (bulk statements, mirror.ts) and its checkpoint's compare-and-set commit
 * together, so a kill -9 at any instant loses and duplicates nothing. Each page's transaction first
 * checks that the stream's lease is still this worker's (leases.ts `fence`): a worker that lost it
 * writes nothing more of the stream. Pages of concurrent streams run on connections of their own.
 * A stream is opened under its lease.
 *
 * Two one-statement pages of a stream may be written at once, on two connections (`overlaps`): the
 * server writes page N+1's rows while page N commits, and page N+1's checkpoint waits for page N's
 * transaction to end (statements.ts withTicket), so page N+1 commits only if page N did. Each
 * commitPage still settles in page order.
 *
 * As with SQLite, the first storage failure is final for the process: every later write throws it.
 */
import type { DriftPage, KnownDrift } from '../../core/drift.js';
import type { Redacted } from '../../core/redact.js';
import type { CheckedRecord, CheckpointMove, StreamId } from '../../core/types.js';
import { LockedError, StorageError } from '../../errors.js';
import type { UpsertCounts } from '../model/page.js';
import type { PageExtras, Sink } from '../sinks/sink.js';
import { upsertCampaigns } from './campaigns.js';
import type { PgDatabase } from './database.js';
import { driftGone, recordDrift } from './drift.js';
import type { PgLeases } from './leases.js';
import { type PagePlan, planPage, removeResults, storedIds, writePage } from './mirror.js';
import { applyQuarantine, touchesQuarantine } from './quarantine.js';
import type { PgState } from './state.js';
import { CHECKPOINT_CONFLICT, holdsUnstorable, TICKET_LIMIT } from './statements.js';

/** The last one-statement page of a stream: its ticket, and its commit while under way. */
interface Chain {
  ticket: number;
  pending: Promise<unknown> | undefined;
}

export class PgSink implements Sink {
  private broken: StorageError | undefined;
  private readonly chains = new Map<string, Chain>();

  constructor(
    private readonly db: PgDatabase,
    private readonly state: PgState,
    /** The stream leases; public for the pass (Sink.leases). */
    readonly leases: PgLeases,
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
  prepare(id: StreamId, records: CheckedRecord[], drift?: DriftPage): PagePlan | undefined {
    if (records.length === 0) return undefined;
    const plan = planPage(id.endpoint, records, id.campaignId, id.reportType ?? 'DETAILED');
    // New drift is written in the page's transaction: such a page is not one statement.
    return drift === undefined ? plan : { ...plan, single: false };
  }

  /**
   * True when the page planned as `next` may be handed to commitPage while the one planned as
   * `previous` is still committing: both are one statement (withTicket), and no record is in both
   * (page N+1 would wait for page N's uncommitted row while holding what page N waits for).
   */
  overlaps(previous: unknown, next: unknown): boolean {
    const a = previous as PagePlan | undefined;
    const b = next as PagePlan | undefined;
    if (a?.single !== true || b?.single !== true) return false;
    const ids = new Set(a.records.map((r) => r.id));
    return !b.records.some((r) => ids.has(r.id));
  }

  async commitPage(
    id: StreamId,
    records: CheckedRecord[],
    move: CheckpointMove | undefined,
    prepared?: unknown,
    { quarantine, drift }: PageExtras = {},
  ): Promise<UpsertCounts> {
    if (records.length === 0) {
      return this.guard(async () => {
        let moved = () => {};
        await this.db.transaction(async (client) => {
          await this.leases.fence(client, id.key);
          moved = await this.state.advance(client, id, move, 0);
          if (touchesQuarantine(quarantine)) await applyQuarantine(client, id, quarantine);
        });
        moved();
        return { inserted: 0, updated: 0 };
      });
    }
    // A plan made for this very page by prepare(), else one made now.
    const made =
      (prepared as PagePlan | undefined)?.page === records ? (prepared as PagePlan) : (this.prepare(id, records, drift) as PagePlan);
    // A page with quarantined records or drift is a transaction: they commit with its rows.
    const plan = (drift !== undefined || touchesQuarantine(quarantine)) && made.single ? { ...made, single: false } : made;
    if (plan.single) return this.commitSingle(id, records, move, plan);
    return this.guard(async () => {
      const cp = { stream: id.key, move };
      let counts: UpsertCounts;
      try {
        counts = await this.db.transaction(async (client) => {
          await this.leases.fence(client, id.key);
          const written = await writePage(client, plan, cp);
          if (touchesQuarantine(quarantine)) await applyQuarantine(client, id, quarantine);
          if (drift !== undefined) await recordDrift(client, id.key, drift, new Date().toISOString());
          return written;
        });
      } catch (err) {
        if (move !== undefined && isConflict(err)) throw await this.state.conflict(id, move);
        throw err;
      }
      this.state.moved(id, move);
      this.warnNul(id, records);
      return this.recordConflicts(id, counts);
    });
  }

  /**
   * After a page committed: its records another campaign holds are recorded once
   * (store/conflicts.ts); `counts.conflicts` keeps those seen for the first time. Not in the page's
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

  /**
   * A one-statement page, atomic without BEGIN/COMMIT, perhaps written while the stream's previous
   * one commits (`overlaps`). If that one fails, this one fails with its error and writes nothing. If
   * this statement ran ahead of it (took the previous ticket before that page did), its
   * compare-and-set finds the cursor not yet moved: it is written again once the previous page is in.
   */
  private commitSingle(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined, plan: PagePlan): Promise<UpsertCounts> {
    const chain = this.chains.get(id.key) ?? { ticket: 0, pending: undefined };
    this.chains.set(id.key, chain);
    chain.ticket = chain.ticket >= TICKET_LIMIT ? 1 : chain.ticket + 1;
    const before = chain.pending;
    const cp = { stream: id.key, move, ticket: chain.ticket };
    // In a transaction of its own after all, for the lease's fence; the page's ticket locks end with it.
    const write = () =>
      this.db.transaction(async (client) => {
        await this.leases.fence(client, id.key);
        return writePage(client, plan, cp);
      });
    const run = this.guard(async () => {
      let counts: UpsertCounts;
      try {
        counts = await write();
      } catch (err) {
        // Written again, once the page before is in (a failure of that page is thrown instead): a
        // deadlock's victim, which rolled back whole; or, while the page before was under way, a page
        // that ran ahead of it (took its ticket first) or whose wait for it was cut short.
        const again = isDeadlock(err) || (move !== undefined && before !== undefined && (isConflict(err) || isLockTimeout(err)));
        if (!again) {
          if (move !== undefined && isConflict(err)) throw await this.state.conflict(id, move);
          throw err;
        }
        if (before !== undefined) await before;
        try {
          return await this.settled(id, move, records, await write(), before);
        } catch (second) {
          if (move !== undefined && isConflict(second)) throw await this.state.conflict(id, move);
          throw second;
        }
      }
      return this.settled(id, move, records, counts, before);
    });
    const pending = run.finally(() => {
      if (chain.pending === pending) chain.pending = undefined;
    });
    pending.catch(() => {});
    chain.pending = pending;
    return run;
  }

  /** After a page committed: once the page before it has settled (page order), its checkpoint in memory. */
  private async settled(
    id: StreamId,
    move: CheckpointMove | undefined,
    records: CheckedRecord[],
    counts: UpsertCounts,
    before: Promise<unknown> | undefined,
  ): Promise<UpsertCounts> {
    // This page's compare-and-set found the previous page committed, whatever its answer said.
    if (before !== undefined) await before.catch(() => {});
    this.state.moved(id, move);
    // A one-statement page wrote each record's JSON text: made already, it says which records to walk.
    this.warnNul(id, records, true);
    return this.recordConflicts(id, counts);
  }

  /** Not silent: the records of the page whose U+0000 or lone surrogates became U+FFFD (statements.ts). */
  private warnNul(id: StreamId, records: CheckedRecord[], textMade = false): void {
    // JSON text (JSON.stringify) writes U+0000 and a lone surrogate as `\u` escapes: a record whose
    // text has none holds neither. Without the text (a DETAILED record stored in parts), the walk.
    const ids = records.filter((r) => (!textMade || r.raw.includes('\\u')) && holdsUnstorable(r.record)).map((r) => r.id);
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

  async prune(id: StreamId, recordIds: string[], at: string): Promise<number> {
    return this.guard(() =>
      this.db.transaction(async (client) => {
        await this.leases.fence(client, id.key);
        const removed = await removeResults(client, id.endpoint, recordIds, at);
        await this.state.advance(client, id, undefined, -removed);
        return removed;
      }),
    );
  }

  async campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void> {
    await this.guard(() => upsertCampaigns(this.db, list, new Date().toISOString(), lister));
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

  async endStream(id: StreamId, error: Redacted | undefined, at: string): Promise<void> {
    await this.guard(() =>
      this.db.transaction(async (client) => {
        await this.leases.fence(client, id.key);
        await this.state.end(id, error, at, client);
      }),
    );
  }

  async driftGone(id: StreamId, items: KnownDrift[], at: string): Promise<void> {
    await this.guard(() => driftGone(this.db, id.key, items, at));
  }

  /** Every page committed on its own: nothing is held back. */
  async flush(): Promise<void> {
    if (this.broken) throw this.broken;
  }

  async close(): Promise<void> {}
}

const isConflict = (err: unknown): boolean => err instanceof Error && err.message.includes(CHECKPOINT_CONFLICT);

/** The role's or database's lock_timeout cut a wait (for the ticket of the page before). */
const isLockTimeout = (err: unknown): boolean => (err as { code?: unknown })?.code === '55P03';

/** The server broke a deadlock by failing this statement (another writer of the same rows). */
const isDeadlock = (err: unknown): boolean => (err as { code?: unknown })?.code === '40P01';
