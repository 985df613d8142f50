/**
 * The request budget's slots in the PostgreSQL mirror (table `budget_slots`), so that every worker
 * with one key, on any host, shares its --rate-limit. The rules are core/rate.ts's; every time is the
 * server's (`clock_timestamp()`) and what comes back is a wait computed there, so the hosts' clocks
 * need not agree. A take is one statement, one round trip: takers of one key at once each lock the
 * row they take and skip the others'. A take that fails (the server unreachable) throws: nothing is sent.
 */
import { randomInt } from 'node:crypto';
import { type BudgetStore, holdMs, type SlotLoan, type SlotTake } from '../../core/rate.js';
import { StorageError } from '../../errors.js';
import type { PgDatabase } from './database.js';

/** $1 key, $2 count, $3 hold (ms), $4 owner: the soonest free row, else the next row made, else the wait for the soonest. */
const TAKE = `WITH t AS (SELECT clock_timestamp() AS now, $3::float8 * interval '1 ms' AS hold),
clamp AS (UPDATE budget_slots s SET busy_until = t.now + t.hold FROM t WHERE s.key = $1 AND s.owner = 0 AND s.busy_until > t.now + t.hold),
pick AS (SELECT coalesce((SELECT slot FROM budget_slots, t WHERE key = $1 AND slot < $2 AND busy_until <= t.now
    ORDER BY busy_until LIMIT 1 FOR UPDATE OF budget_slots SKIP LOCKED),
  (SELECT count(*)::int FROM budget_slots WHERE key = $1 AND slot < $2)) AS slot),
took AS (INSERT INTO budget_slots AS s SELECT $1, pick.slot, t.now + t.hold, $4 FROM pick, t WHERE pick.slot < $2
  ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, owner = excluded.owner
  WHERE s.busy_until <= clock_timestamp() RETURNING s.slot)
SELECT (SELECT slot FROM took) AS taken, s.owner <> 0 AS in_flight,
  greatest(1, extract(epoch FROM least(s.busy_until, t.now + t.hold) - t.now) * 1000)::float8 AS wait_ms
FROM t LEFT JOIN LATERAL (SELECT busy_until, owner FROM budget_slots WHERE key = $1 AND slot < $2 ORDER BY busy_until LIMIT 1) s ON true`;
/** $1 key, $2 slot, $3 owner, $4 answered, $5 hold (ms), $6 window (ms): as the SQLite file's end. */
const END = `UPDATE budget_slots SET owner = 0, busy_until = least(busy_until, $6::float8 * interval '1 ms' + CASE WHEN $4 THEN clock_timestamp()
  ELSE greatest(clock_timestamp(), busy_until - ($5::float8 - $6::float8) * interval '1 ms') END) WHERE key = $1 AND slot = $2 AND owner = $3`;

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
    const owner = randomInt(1, 2 ** 47);
    const take = () =>
      this.db.query<{ taken: number | null; wait_ms: number; in_flight: boolean | null }>(
        TAKE,
        [this.key, count, holdMs(this.timeoutMs, windowMs), owner],
        'cannot take a slot of the request budget in',
      );
    // A pooled connection the server closed while idle (idle_session_timeout, a restart) fails the
    // one statement it is handed before the pool drops it: asked again once, on a fresh connection.
    const r = await take().catch((err) => (err instanceof StorageError && err.disconnected ? take() : Promise.reject(err)));
    const row = r.rows[0];
    if (row?.taken != null) return { slot: row.taken, owner, windowMs };
    return { waitMs: row?.wait_ms ?? 1, inFlight: row?.in_flight === true };
  }

  end(loan: SlotLoan, answered: boolean): void {
    const hold = holdMs(this.timeoutMs, loan.windowMs);
    // Not written (the connection lost): the row stays busy as taken, its longest hold.
    const done = this.db.query(END, [this.key, loan.slot, loan.owner, answered, hold, loan.windowMs]).catch(() => {});
    this.ending.add(done);
    void done.then(() => this.ending.delete(done));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.ending]);
  }
}
