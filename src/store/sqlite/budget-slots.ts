/**
 * The request budget's slots (core/rate.ts) in a small SQLite file of the user's state folder
 * (`$XDG_STATE_HOME/campaign-sync/budget-slots.db`), shared by every process of the user, on this
 * machine's wall clock. A take is one short write transaction (they come one after the other), which
 * also says the process's limit and reads the key's agreed one (the stricter of the live processes').
 *
 * Each live limit is a row of the same table under a key of its own, `<key>#limit/<window ms>`, its
 * count as `slot` and until when it is live as `busy_until`: a file an earlier release shares keeps
 * working for it (those keys are never its own), and one it made is read as is.
 */
import { randomInt } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { type Clock, realClock } from '../../core/clock.js';
import { makeFolders } from '../../core/fs/folders.js';
import { refuseLinks } from '../../core/fs/private-file.js';
import { currentWaits } from '../../core/io.js';
import {
  type BudgetStore,
  holdMs,
  LIMIT_LIFE_MS,
  paddedWindow,
  type Rate,
  type SlotLoan,
  type SlotTake,
  stricterRate,
} from '../../core/rate.js';
import { errorCode, StorageError } from '../../errors.js';
import { Database } from './driver.js';
import { openSqlite, prepareSqliteFile, SQLITE_SIDES } from './private-db.js';

export const SLOTS_FILE = 'budget-slots.db';

/** A damaged file: its busy slots cannot be known, so nothing is sent until it is removed (exit 74). */
export class BudgetDamaged extends StorageError {}

/** A path the budget cannot use, left as it was found; the message says what is there and what to do. */
export class BudgetUnusable extends Error {
  readonly code = 'EBUDGET';
}

export interface SlotsOptions {
  timeoutMs: number;
  clock?: Clock | undefined;
  /** Hears of what goes wrong after the open, once each. */
  warn?: ((text: string) => void) | undefined;
}

/** A lock held this long (ms) is another program's (an sqlite3 shell left in a transaction): said once. A take looks again 25 ms on. */
const [LOCKED_SAY_MS, LOCKED_RETRY_MS] = [10_000, 25];

// A key's rows are made as needed, numbered 0..n-1; `+slot` finds a free one by the index of busy times, not by sorting them all.
const SQL = {
  clamp: 'UPDATE slots SET busy_until = @now + @hold WHERE key = @key AND owner = 0 AND busy_until > @now + @hold',
  // Every busy row of the key, past the agreed count too, and when the soonest can be free (one in flight: a window after an answer now).
  busy: 'SELECT count(*) AS n, min(CASE WHEN owner <> 0 THEN min(busy_until, @now + @window) ELSE busy_until END) AS soonest FROM slots WHERE key = @key AND busy_until > @now',
  first: 'SELECT slot, busy_until, owner FROM slots WHERE key = @key AND +slot < @count ORDER BY busy_until LIMIT 1',
  rows: 'SELECT coalesce(max(slot) + 1, 0) AS n FROM slots WHERE key = @key AND slot < @count',
  take: 'INSERT INTO slots VALUES (@key, @slot, @now + @hold, @owner) ON CONFLICT (key, slot) DO UPDATE SET busy_until = @now + @hold, owner = @owner',
  end: 'UPDATE slots SET owner = 0, busy_until = min(busy_until, @until) WHERE key = @key AND slot = @slot AND owner = @owner',
  say: 'INSERT INTO slots VALUES (@limitKey, @count, @until, 0) ON CONFLICT (key, slot) DO UPDATE SET busy_until = max(busy_until, @until)',
  // The key's limit rows sort between `<key>#limit/` and `<key>#limit0` ('0' follows '/'): the primary key's order.
  limits: 'SELECT key, slot AS count FROM slots WHERE key > @lo AND key < @hi AND busy_until > @now',
};

export class SqliteBudgetSlots implements BudgetStore {
  readonly immediate = true;
  private readonly s: Record<keyof typeof SQL, BetterSqlite3.Statement>;
  /** Since when takes have found the file locked (once said: never again until it is released). */
  private lockedSince: number | undefined;
  /** A write failed (a full disk): the run goes on by its own budget, as said once. */
  private broken = false;
  /** This process's limit, once it took a slot: said again every third of its life while the process lives. */
  private own: Rate | undefined;
  private renewal: NodeJS.Timeout | undefined;

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly path: string,
    private readonly key: string,
    private readonly options: SlotsOptions,
    private readonly clock: Clock,
  ) {
    this.s = Object.fromEntries(Object.entries(SQL).map(([k, sql]) => [k, db.prepare(sql)])) as typeof this.s;
  }

  /**
   * Opens (creating, 0700/0600) the slots in `dir` for `key`. Throws BudgetUnusable for a path that is not
   * a file of its own, BudgetDamaged for a damaged file (forgetting its busy slots could send past the rate).
   */
  static open(dir: string, key: string, options: SlotsOptions): SqliteBudgetSlots {
    makeFolders(dir, 0o700);
    const path = join(dir, SLOTS_FILE);
    // A symbolic link planted at one of its names is refused (exit 2), never written through.
    refuseLinks([path, ...SQLITE_SIDES.map((side) => path + side)]);
    for (const side of [path, `${path}-journal`]) {
      const stat = lstatSync(side, { throwIfNoEntry: false });
      const fix = 'remove it or move it away to share the budget again';
      if (stat !== undefined && !stat.isFile())
        throw new BudgetUnusable(`${side} is not a file (a folder, a named pipe or a device): ${fix}`);
      if ((stat?.nlink ?? 1) > 1)
        throw new BudgetUnusable(`${side} has ${stat?.nlink} names (hard links); the budget is only written to a file of its own: ${fix}`);
    }
    let db: BetterSqlite3.Database | undefined;
    try {
      if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) checkOurs(path);
      // Made 0600 only once it is known to be ours: another program's database keeps its mode.
      prepareSqliteFile(path);
      db = openSqlite(path);
      db.pragma('busy_timeout = 2000');
      // A rollback journal kept between transactions: a take rewrites rows in place, so once the
      // journal and the rows exist it needs no new block, on a full disk too.
      db.pragma('journal_mode = PERSIST');
      db.pragma('synchronous = OFF');
      db.exec(
        'CREATE TABLE IF NOT EXISTS slots (key TEXT NOT NULL, slot INTEGER NOT NULL, busy_until REAL NOT NULL, owner INTEGER NOT NULL, PRIMARY KEY (key, slot)) WITHOUT ROWID; CREATE INDEX IF NOT EXISTS slots_free ON slots (key, busy_until)',
      );
      // A file of the release whose rows also kept their window and hold: those go, the times stay.
      const drop = 'ALTER TABLE slots DROP COLUMN window_ms; ALTER TABLE slots DROP COLUMN hold_ms';
      if ((db.pragma('table_info(slots)') as unknown[]).length > 4) db.exec(`BEGIN IMMEDIATE; ${drop}; COMMIT`);
      const verdict = db.pragma('quick_check', { simple: true });
      if (verdict !== 'ok') throw Object.assign(new Error(`quick_check: ${String(verdict)}`), { code: 'SQLITE_CORRUPT' });
      db.pragma(`busy_timeout = ${currentWaits().budgetBusyMs}`);
      return new SqliteBudgetSlots(db, path, key, options, options.clock ?? realClock);
    } catch (err) {
      db?.close();
      const code = errorCode(err) ?? '';
      if (!/^SQLITE_(NOTADB|CORRUPT)/.test(code)) throw err;
      const fix = 'remove it once no other campaign-sync run with this key is running, and run again';
      throw new BudgetDamaged(`the request budget's file ${path} is damaged (${code}); it holds only the budget's slots: ${fix}`, { code });
    }
  }

  take(rate: Rate): SlotTake {
    if (this.broken) return { slot: -1, owner: 0, windowMs: paddedWindow(rate.windowMs) };
    const now = this.clock.now();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      if (errorCode(err)?.startsWith('SQLITE_BUSY') !== true) return this.failed(err);
      this.lockedSince ??= now;
      if (now - this.lockedSince >= LOCKED_SAY_MS) {
        this.lockedSince = Number.POSITIVE_INFINITY;
        this.options.warn?.(
          `the request budget waits: ${this.path} has been locked by another program for ${LOCKED_SAY_MS / 1000} s (an sqlite3 shell left in a transaction?); nothing is sent until it is released`,
        );
      }
      return { waitMs: LOCKED_RETRY_MS };
    }
    this.lockedSince = undefined;
    try {
      const limit = this.agree(rate, now);
      const { count } = limit;
      const windowMs = paddedWindow(limit.windowMs);
      const p = { key: this.key, now, count, hold: holdMs(this.options.timeoutMs, windowMs) };
      this.s.clamp.run(p);
      // As many rows busy as the agreed count, whichever (a count that shrank leaves rows past it busy): none is free.
      const busy = this.s.busy.get({ key: this.key, now, window: windowMs }) as { n: number; soonest: number | null };
      let slot = count;
      if (busy.n < count) {
        const first = this.s.first.get(p) as { slot: number; busy_until: number } | undefined;
        slot = first !== undefined && first.busy_until <= now ? first.slot : (this.s.rows.get(p) as { n: number }).n;
      }
      const owner = randomInt(1, 2 ** 47);
      if (slot < count) this.s.take.run({ ...p, slot, owner });
      this.db.exec('COMMIT');
      this.keepSaying(rate);
      return slot < count ? { slot, owner, windowMs, limit } : { waitMs: Math.max(1, (busy.soonest ?? now) - now), limit };
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      return this.failed(err);
    }
  }

  end({ slot, owner, windowMs }: SlotLoan, answered: boolean): void {
    if (slot < 0 || this.broken) return;
    const p = { key: this.key, slot, owner, until: answered ? this.clock.now() + windowMs : Number.MAX_VALUE };
    try {
      this.s.end.run(p);
    } catch {
      // Not written (locked, a full disk): the row stays busy as taken, its longest hold.
    }
  }

  close(): void {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = undefined;
    this.db.close();
  }

  /**
   * In a take's transaction: says this process keeps to `rate` (live for LIMIT_LIFE_MS more) and reads
   * the limit the key's live processes agree on, the smallest count and the longest window.
   */
  private agree(rate: Rate, now: number): Rate {
    this.s.say.run({ limitKey: `${this.key}#limit/${rate.windowMs}`, count: rate.count, until: now + LIMIT_LIFE_MS });
    const lo = `${this.key}#limit/`;
    const rows = this.s.limits.all({ lo, hi: `${this.key}#limit0`, now }) as Array<{ key: string; count: number }>;
    let agreed = rate;
    for (const r of rows) {
      const windowMs = Number(r.key.slice(lo.length));
      if (Number.isFinite(windowMs)) agreed = stricterRate(agreed, { count: r.count, windowMs });
    }
    return agreed;
  }

  /** While the process lives, its limit stays live: a watch idle between passes still binds the others. */
  private keepSaying(rate: Rate): void {
    this.own = rate;
    if (this.renewal !== undefined) return;
    this.renewal = setInterval(() => {
      const own = this.own;
      if (own === undefined || this.broken) return;
      try {
        this.db.exec('BEGIN IMMEDIATE');
        try {
          this.agree(own, this.clock.now());
          this.db.exec('COMMIT');
        } finally {
          if (this.db.inTransaction) this.db.exec('ROLLBACK');
        }
      } catch {
        // Locked or full: the next take or the next renewal says it again, well within its life.
      }
    }, LIMIT_LIFE_MS / 3);
    this.renewal.unref();
  }

  /** A write that failed (a full disk): the others stop seeing this run's requests, as said once. */
  private failed(err: unknown): SlotTake {
    this.broken = true;
    this.options.warn?.(
      `the request budget is no longer shared with other runs: ${this.path} could not be written (${errorCode(err) ?? 'error'}); this run's requests from now on are not counted by the others`,
    );
    return { slot: -1, owner: 0, windowMs: 0 };
  }
}

/** Throws BudgetUnusable when the file at `path` holds tables other than ours (read through a read-only connection). */
function checkOurs(path: string): void {
  const probe = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const foreign = probe.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'slots' LIMIT 3").pluck().all();
    const what = `${path} holds tables that are not the budget's (${foreign.join(', ')}): another program's database`;
    if (foreign.length > 0) throw new BudgetUnusable(`${what}; move it away to share the budget again`);
  } finally {
    probe.close();
  }
}
