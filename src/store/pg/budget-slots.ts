/**
 * The request budget's slots in the PostgreSQL mirror (table `budget_slots`, function `budget_take`:
 * schema.ts), so that every worker with one key, on any host, shares its --rate-limit. The rules and
 * their invariant are store/budget-slots.ts's; every time is the server's (`clock_timestamp()`), and
 * what comes back is a wait computed there, so the hosts' clocks need not agree. A take is one
 * statement (one round trip); a take that fails (the server unreachable) throws, and nothing is sent.
 */
import { randomInt } from 'node:crypto';
import type { BudgetStore, SlotLoan, SlotTake } from '../../core/rate.js';
import { StorageError } from '../../errors.js';
import type { PgDatabase } from './database.js';

const TAKE = 'SELECT taken, wait_ms, in_flight FROM budget_take($1, $2, $3, $4, $5)';
const END = `UPDATE budget_slots SET owner = 0, busy_until = least(busy_until, CASE WHEN $4 THEN clock_timestamp()
  ELSE greatest(clock_timestamp(), busy_until - (hold_ms - window_ms) * interval '1 millisecond') END + window_ms * interval '1 millisecond')
  WHERE key = $1 AND slot = $2 AND owner = $3`;

export class PgBudgetSlots implements BudgetStore {
  readonly immediate = false;
  /** Ends being written: close() waits for them before the pool ends. */
  private readonly ending = new Set<Promise<unknown>>();

  constructor(
    private readonly db: PgDatabase,
    private readonly key: string,
    private readonly timeoutMs: number,
  ) {}

  async take(count: number, windowMs: number): Promise<SlotTake> {
    try {
      return await this.takeOnce(count, windowMs);
    } catch (err) {
      // A pooled connection the server closed while it sat idle (idle_session_timeout, a restart)
      // fails the one statement it is handed before the pool drops it: the take is asked again on a
      // fresh connection. A take that ran before the loss keeps its slot busy, the safe side of the rate.
      if (err instanceof StorageError && err.disconnected) return this.takeOnce(count, windowMs);
      throw err;
    }
  }

  private async takeOnce(count: number, windowMs: number): Promise<SlotTake> {
    const owner = randomInt(1, 2 ** 47);
    const r = await this.db.query<{ taken: number | null; wait_ms: number | null; in_flight: boolean | null }>(
      TAKE,
      [this.key, count, windowMs, this.timeoutMs, owner],
      'cannot take a slot of the request budget in',
    );
    const row = r.rows[0];
    if (row?.taken != null) return { slot: row.taken, owner };
    return { waitMs: row?.wait_ms ?? 1, inFlight: row?.in_flight === true };
  }

  end(loan: SlotLoan, answered: boolean): void {
    // Not written (the connection lost): the row stays busy as taken, its longest hold.
    const done = this.db.query(END, [this.key, loan.slot, loan.owner, answered]).catch(() => {});
    this.ending.add(done);
    void done.then(() => this.ending.delete(done));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.ending]);
  }
}
