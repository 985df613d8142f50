/**
 * The request budget's slots (core/rate.ts) in the PostgreSQL mirror, shared by every worker with the
 * key on any host, on the server's clock alone (`clock_timestamp()`): the hosts' clocks need not agree.
 *
 * A take is one short transaction, three statements and a commit: the key's lock, the key's agreed
 * limit (the stricter of the live processes' limits, `budget_limits`), then a slot by it.
 * - The commit waits for its WAL flush, where the mirror's other writes do not (database.ts): a take
 *   lost in a crash of the server after its request was sent leaves its slot free after the restart
 *   while the service still counts that request, and the next taker's request is one too many.
 * - Under the key's lock (transaction-scoped, advisory), takes are one after the other: each counts
 *   the busy slots as they are when it takes, so an agreed count that shrank below the rows a looser
 *   limit made is kept exactly; and the server's clock is read once the lock is held, never before a
 *   wait for it.
 * One that fails (the server unreachable) throws: nothing is sent.
 */
import { randomInt } from 'node:crypto';
import type pg from 'pg';
import { type BudgetStore, holdMs, LIMIT_LIFE_MS, paddedWindow, type Rate, type SlotLoan, type SlotTake } from '../../core/rate.js';
import { StorageError } from '../../errors.js';
import type { PgDatabase } from './database.js';

const MS = "$ms::float8 * interval '1 millisecond'";
const ms = (param: string) => MS.replace('$ms', param);

/**
 * $1 key, $2 count, $3 window (ms), $4 life (ms): this process's limit said again (live for `life`
 * more), and the key's agreed limit: the smallest count and the longest window of the live ones.
 */
const LIMIT = `WITH own AS (
    INSERT INTO budget_limits AS l (key, count, window_ms, until) VALUES ($1, $2, $3, clock_timestamp() + ${ms('$4')})
    ON CONFLICT (key, count, window_ms) DO UPDATE SET until = greatest(l.until, excluded.until) RETURNING l.count, l.window_ms)
SELECT min(c)::int AS count, max(w)::float8 AS window_ms FROM (
  SELECT count AS c, window_ms AS w FROM budget_limits WHERE key = $1 AND until > clock_timestamp()
  UNION ALL SELECT count, window_ms FROM own) x`;

/**
 * $1 key, $2 count, $3 padded window (ms), $4 hold (ms), $5 owner: a free row of the first `count`
 * (made as needed), unless `count` rows of the key are busy, whichever; else the wait until the soonest
 * busy row can be free (a row in flight: a window after an answer now, at the soonest). A row from the
 * future that ended (the server's clock set back) is brought back to one hold from now.
 */
const TAKE = `WITH t AS (SELECT clock_timestamp() AS now),
clamp AS (UPDATE budget_slots s SET busy_until = t.now + ${ms('$4')} FROM t WHERE s.key = $1 AND s.owner = 0 AND s.busy_until > t.now + ${ms('$4')}),
busy AS (SELECT count(*) AS n, min(CASE WHEN owner <> 0 THEN least(busy_until, t.now + ${ms('$3')}) ELSE busy_until END) AS soonest
  FROM budget_slots, t WHERE key = $1 AND busy_until > t.now),
pick AS (SELECT CASE WHEN busy.n >= $2 THEN NULL ELSE coalesce(
    (SELECT slot FROM budget_slots, t WHERE key = $1 AND slot < $2 AND busy_until <= t.now ORDER BY busy_until, slot LIMIT 1),
    (SELECT count(*)::int FROM budget_slots WHERE key = $1 AND slot < $2)) END AS slot FROM busy),
took AS (INSERT INTO budget_slots AS s SELECT $1, pick.slot, t.now + ${ms('$4')}, $5 FROM pick, t WHERE pick.slot < $2
  ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, owner = excluded.owner
  WHERE s.busy_until <= clock_timestamp() RETURNING s.slot)
SELECT (SELECT slot FROM took) AS taken, greatest(1, extract(epoch FROM busy.soonest - t.now) * 1000)::float8 AS wait_ms FROM t, busy`;

/** $1 key, $2 slot, $3 owner, $4 window (ms) if answered (busy until a window from now), else null (busy as taken). */
const END = `UPDATE budget_slots SET owner = 0, busy_until = least(busy_until, clock_timestamp() + ${ms('$4')})
  WHERE key = $1 AND slot = $2 AND owner = $3`;

/** The advisory lock's first half, ours alone among the mirror's locks (a two-part key, unlike the pages' tickets). */
const LOCK_CLASS = 0x62756467; // "budg"

const WHAT = 'cannot take a slot of the request budget in';

type TakeRow = { taken: number | null; wait_ms: number };
type LimitRow = { count: number; window_ms: number };

export class PgBudgetSlots implements BudgetStore {
  readonly immediate = false;
  /** Ends being written: close() waits for them before the pool ends. */
  private readonly ending = new Set<Promise<unknown>>();
  /** This process's limit, once it took a slot: said again every third of its life while the process lives. */
  private own: Rate | undefined;
  private renewal: NodeJS.Timeout | undefined;
  private readonly lock: string;

  constructor(
    private readonly db: PgDatabase,
    private readonly key: string,
    private readonly timeoutMs: number,
  ) {
    // Two 32-bit halves (no text reaches the statement): the key's own lock, whatever the schema.
    this.lock = `BEGIN; SELECT set_config('synchronous_commit', 'on', true), pg_advisory_xact_lock(${LOCK_CLASS}, ${hash32(key)})`;
  }

  async take(rate: Rate): Promise<SlotTake> {
    const owner = randomInt(1, 2 ** 47);
    const once = () =>
      this.locked(async (client) => {
        const agreed = await this.agree(client, rate);
        const windowMs = paddedWindow(agreed.windowMs);
        const values = [this.key, agreed.count, windowMs, holdMs(this.timeoutMs, windowMs), owner];
        const row = (await client.query<TakeRow>(TAKE, values)).rows[0];
        const limit = { count: agreed.count, windowMs: agreed.windowMs };
        return row?.taken != null ? { slot: row.taken, owner, windowMs, limit } : { waitMs: row?.wait_ms ?? 1, limit };
      });
    // A pooled connection the server closed while idle (or a restart) fails its next statement: asked
    // again once, on a fresh one. A take that ran before the loss keeps its slot busy: the safe side.
    const taken = await once().catch((err) => (err instanceof StorageError && err.disconnected ? once() : Promise.reject(err)));
    this.keepSaying(rate);
    return taken;
  }

  end(loan: SlotLoan, answered: boolean): void {
    // Not written (the connection lost), or lost in a crash of the server (it commits without waiting
    // for its flush): the row stays busy as taken, its longest hold.
    const done = this.db.query(END, [this.key, loan.slot, loan.owner, answered ? loan.windowMs : null]).catch(() => {});
    this.ending.add(done);
    void done.then(() => this.ending.delete(done));
  }

  async close(): Promise<void> {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = undefined;
    await Promise.allSettled(this.ending);
  }

  /** Says this process keeps to `rate` and reads the limit the key's live processes agree on (in the key's lock). */
  private async agree(client: pg.ClientBase, rate: Rate): Promise<Rate> {
    const row = (await client.query<LimitRow>(LIMIT, [this.key, rate.count, rate.windowMs, LIMIT_LIFE_MS])).rows[0];
    return { count: row?.count ?? rate.count, windowMs: row?.window_ms ?? rate.windowMs };
  }

  /** While the process lives, its limit stays live: a watch idle between passes still binds the others. */
  private keepSaying(rate: Rate): void {
    this.own = rate;
    if (this.renewal !== undefined) return;
    this.renewal = setInterval(() => {
      const own = this.own;
      if (own !== undefined) void this.locked((client) => this.agree(client, own)).catch(() => {});
    }, LIMIT_LIFE_MS / 3);
    this.renewal.unref();
  }

  /** `fn` in a transaction holding the key's lock, committed once its WAL is flushed. */
  private locked<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.db.transaction(fn, WHAT, this.lock);
  }
}

/** A 32-bit FNV-1a hash of `text`, as a signed integer (an advisory lock's half). */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}
