/**
 * The request budget's slots (core/rate.ts) in the PostgreSQL mirror, shared by every worker with the
 * key on any host, on the server's clock alone (`clock_timestamp()`): the hosts' clocks need not agree.
 * A take is one statement, one round trip; one that fails (the server unreachable) throws: nothing is sent.
 */
import { randomInt } from 'node:crypto';
import { type BudgetStore, holdMs, type SlotLoan, type SlotTake } from '../../core/rate.js';
import { StorageError } from '../../errors.js';
import type { PgDatabase } from './database.js';

/** $1 key, $2 count, $3 hold (ms), $4 owner: the soonest free row (takers at once skip each other's), or a row made, or the wait. */
const TAKE = `WITH t AS (SELECT clock_timestamp() AS now, $3::float8 * interval '1 ms' AS hold),
clamp AS (UPDATE budget_slots s SET busy_until = t.now + t.hold FROM t WHERE s.key = $1 AND s.owner = 0 AND s.busy_until > t.now + t.hold),
pick AS (SELECT coalesce((SELECT slot FROM budget_slots, t WHERE key = $1 AND slot < $2 AND busy_until <= t.now
    ORDER BY busy_until LIMIT 1 FOR UPDATE OF budget_slots SKIP LOCKED),
  (SELECT count(*)::int FROM budget_slots WHERE key = $1 AND slot < $2)) AS slot),
took AS (INSERT INTO budget_slots AS s SELECT $1, pick.slot, t.now + t.hold, $4 FROM pick, t WHERE pick.slot < $2
  ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, owner = excluded.owner
  WHERE s.busy_until <= clock_timestamp() RETURNING s.slot)
SELECT (SELECT slot FROM took) AS taken, s.owner <> 0 AS in_flight,
  (SELECT count(*) FROM budget_slots WHERE key = $1 AND slot < $2) < $2 AS room,
  greatest(1, extract(epoch FROM least(s.busy_until, t.now + t.hold) - t.now) * 1000)::float8 AS wait_ms
FROM t LEFT JOIN LATERAL (SELECT busy_until, owner FROM budget_slots WHERE key = $1 AND slot < $2 ORDER BY busy_until LIMIT 1) s ON true`;
/** $1 key, $2 slot, $3 owner, $4 window (ms) if answered (busy until a window from now), else null (busy as taken). */
const END = `UPDATE budget_slots SET owner = 0, busy_until = least(busy_until, clock_timestamp() + $4::float8 * interval '1 ms')
  WHERE key = $1 AND slot = $2 AND owner = $3`;

type TakeRow = { taken: number | null; wait_ms: number; in_flight: boolean | null; room: boolean };

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
    const values = [this.key, count, holdMs(this.timeoutMs, windowMs), owner];
    const take = () => this.db.query<TakeRow>(TAKE, values, 'cannot take a slot of the request budget in');
    // A pooled connection the server closed while idle fails its next statement: asked again once, on a fresh one.
    const once = () => take().catch((err) => (err instanceof StorageError && err.disconnected ? take() : Promise.reject(err)));
    let row = (await once()).rows[0];
    // Lost a race to make the same new row (unseen by the statement's snapshot): room is left, so ask again now.
    for (let i = 0; row?.taken == null && row?.room === true && i < 8; i++) row = (await once()).rows[0];
    return row?.taken != null ? { slot: row.taken, owner, windowMs } : { waitMs: row?.wait_ms ?? 1, inFlight: row?.in_flight === true };
  }

  end(loan: SlotLoan, answered: boolean): void {
    // Not written (the connection lost): the row stays busy as taken, its longest hold.
    const done = this.db.query(END, [this.key, loan.slot, loan.owner, answered ? loan.windowMs : null]).catch(() => {});
    this.ending.add(done);
    void done.then(() => this.ending.delete(done));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.ending);
  }
}
