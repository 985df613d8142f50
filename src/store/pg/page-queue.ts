/**
 * One stream's pages on their way into PostgreSQL (sink.ts): the stream hands a page once the call
 * for the page before it resolved, and the queue writes it while that page may still be committing,
 * two pages at most. Two pages overlap only when both are one statement that moves the checkpoint (in
 * a transaction that holds nothing else but the lease's fence, a shared row lock: sink.ts) and no
 * record is in both (`overlaps`): the later one's compare-and-set then waits for the earlier one's
 * transaction to end (statements.ts withTicket) and fails, writing nothing, unless it committed. Any
 * other page starts once the page before it has committed. So a page commits only if every page
 * before it did, and a kill -9 at any instant leaves a prefix of the stream's pages, checkpoint
 * included.
 *
 * The first failure is the stream's: the page after it is never started (or, already under way,
 * writes nothing), and every later call throws it.
 */
import type { CheckpointMove } from '../../core/types.js';
import type { UpsertCounts } from '../model/page.js';
import { TICKET_LIMIT } from './statements.js';
import type { PagePlan } from './upserts.js';

/**
 * Writes one page: `ticket` is its number in the stream when it is one statement (withTicket), and
 * `before` the commit of the page it overlaps, if it does.
 */
export type PageWrite = (ticket: number | undefined, before: Promise<UpsertCounts> | undefined) => Promise<UpsertCounts>;

interface Page {
  plan: PagePlan | undefined;
  move: CheckpointMove | undefined;
  done: Promise<UpsertCounts>;
}

const NONE: UpsertCounts = { inserted: 0, updated: 0 };

function add(a: UpsertCounts, b: UpsertCounts): UpsertCounts {
  const conflicts = [...(a.conflicts ?? []), ...(b.conflicts ?? [])];
  return { inserted: a.inserted + b.inserted, updated: a.updated + b.updated, ...(conflicts.length > 0 ? { conflicts } : {}) };
}

/** `next` may be written while `previous` commits: both move the checkpoint (the later compare-and-set is what refuses it after a failure), and overlap. */
function alongside(previous: Page, next: PagePlan | undefined, move: CheckpointMove | undefined): boolean {
  return previous.move !== undefined && move !== undefined && overlaps(previous.plan, next);
}

/**
 * True when the page planned as `next` may be written while the one planned as `previous` commits:
 * both are one statement (withTicket), and no record is in both (page N+1 would wait for page N's
 * uncommitted row while holding what page N waits for).
 */
export function overlaps(previous: PagePlan | undefined, next: PagePlan | undefined): boolean {
  if (previous?.single !== true || next?.single !== true) return false;
  const ids = new Set(previous.records.map((r) => r.id));
  return !next.records.some((r) => ids.has(r.id));
}

export class PageQueue {
  private ticket = 0;
  /** The pages started whose counts were not handed on yet, in page order: two at most. */
  private pages: Page[] = [];
  private failure: unknown;
  private failed = false;

  /**
   * Starts a page's write once the pages before it allow: the one before it may still be under way
   * if the two overlap; any earlier one must have committed. Resolves once it is started, with the
   * counts of the pages before it that committed meanwhile.
   */
  async push(plan: PagePlan | undefined, move: CheckpointMove | undefined, write: PageWrite): Promise<UpsertCounts> {
    if (this.failed) throw this.failure;
    let counts = NONE;
    for (
      let last = this.pages.at(-1);
      last !== undefined && (this.pages.length > 1 || !alongside(last, plan, move));
      last = this.pages.at(-1)
    )
      counts = add(counts, await this.oldest());
    const ticket = plan?.single === true ? this.nextTicket() : undefined;
    const done = write(ticket, this.pages[0]?.done);
    // Awaited by a later push or settle: meanwhile its failure is no unhandled rejection.
    done.catch(() => {});
    this.pages.push({ plan, move, done });
    return counts;
  }

  /** Waits for the pages under way; resolves with the counts not handed on, or throws the stream's failure. */
  async settle(): Promise<UpsertCounts> {
    let counts = NONE;
    while (this.pages.length > 0) counts = add(counts, await this.oldest());
    if (this.failed) throw this.failure;
    return counts;
  }

  /** Waits for the pages under way without taking their counts (they stay for settle); throws the stream's failure. */
  async idle(): Promise<void> {
    for (const page of [...this.pages]) await page.done.catch((err: unknown) => this.fail(err));
    if (this.failed) throw this.failure;
  }

  /** The oldest page's counts once it committed; its failure (or an earlier one) is thrown, once the pages after it have ended too. */
  private async oldest(): Promise<UpsertCounts> {
    const page = this.pages.shift();
    try {
      const counts = await page?.done;
      if (!this.failed) return counts ?? NONE;
    } catch (err) {
      this.fail(err);
    }
    // The pages after it write nothing now (page-queue's rule), but may still be under way.
    for (const later of this.pages.splice(0)) await later.done.catch(() => {});
    throw this.failure;
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.failure = err;
  }

  /** 1 to TICKET_LIMIT, then 1 again (the page before is then 0: no wait, at worst a retry). */
  private nextTicket(): number {
    this.ticket = this.ticket >= TICKET_LIMIT ? 1 : this.ticket + 1;
    return this.ticket;
  }
}
