/**
 * The request budget's slots in a small SQLite file of the user's state folder
 * (`$XDG_STATE_HOME/campaign-sync/budget-slots.db`), shared by every process of the user: at most N
 * rows per key (a digest of base URL and API key, never the key), each busy until a time. A take is
 * one short write transaction; nothing grows past N rows a key, nothing is pruned.
 *
 * Invariant, per key: every request sent holds one row from its send until a window after its end
 * (unknown end: a window after the later of its give-up and a window after its send; left in flight:
 * `hold_ms`, the longer of --timeout and the window plus the window, after its send), and a row is
 * taken only when no request holds it. The window is the longest of the key's rows still held
 * (`window_ms`): a shorter-window process beside a longer-window one holds rows as long, and counts
 * theirs by its own. A process of N per window takes only rows 0..N-1: processes that agree on the
 * rate share it exactly; with different N, together they stay within the largest.
 *
 * Times are this machine's wall clock; a row further ahead than its `hold_ms` (written before the
 * clock was set back) is brought back to now plus its hold, the most a request can hold.
 */
import { randomInt } from 'node:crypto';
import { lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { type Clock, realClock } from '../core/clock.js';
import type { BudgetStore, SlotLoan, SlotTake } from '../core/rate.js';
import { errorCode, StorageError } from '../errors.js';
import { makeFolders } from './folders.js';
import { openSqlite, prepareSqliteFile, refuseLinks, SQLITE_SIDES } from './private-file.js';
import { Database } from './sqlite.js';

/** The file in the state folder (the earlier request log, `budget.db`, is not read). */
export const SLOTS_FILE = 'budget-slots.db';

/** A damaged file: its busy slots cannot be known, so nothing is sent until it is removed (exit 74). */
export class BudgetDamaged extends StorageError {}

/** A path the budget cannot use, left as it was found; the message says what is there and what to do. */
export class BudgetUnusable extends Error {
  readonly code = 'EBUDGET';
}

export interface SlotsOptions {
  /** The client's --timeout: a request in flight holds its row that long, and a window more. */
  timeoutMs: number;
  clock?: Clock | undefined;
  /** How long one take waits for another process's transaction before looking again later (ms). */
  busyTimeoutMs?: number;
  /** Hears of what goes wrong after the open, once each. */
  warn?: ((text: string) => void) | undefined;
}

/** A lock held this long (ms) is another program's (an sqlite3 shell left in a transaction): said once. */
const LOCKED_SAY_MS = 10_000;
/** How soon a take that found the file locked looks again. */
const LOCKED_RETRY_MS = 25;

/** Each take, in one transaction: rows from the future brought back, the longest window held, the row free first. */
const SQL = {
  clamp: 'UPDATE slots SET busy_until = @now + hold_ms WHERE key = @key AND busy_until > @now + hold_ms',
  held: 'SELECT max(@window, coalesce(max(window_ms), 0)) FROM slots WHERE key = @key AND busy_until > @now',
  first:
    'SELECT slot, busy_until + max(0, @held - window_ms) AS free_at, owner FROM slots WHERE key = @key AND slot < @count ORDER BY free_at LIMIT 1',
  rows: 'SELECT count(*) FROM slots WHERE key = @key',
  inFlight: 'SELECT count(*) FROM slots WHERE key = @key AND slot < @count AND owner != 0 AND busy_until > @now',
  take: `INSERT INTO slots (key, slot, busy_until, window_ms, hold_ms, owner) VALUES (@key, @slot, @now + @hold, @held, @hold, @owner)
    ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, window_ms = excluded.window_ms, hold_ms = excluded.hold_ms, owner = excluded.owner`,
  answered:
    'UPDATE slots SET busy_until = min(busy_until, @now + window_ms), owner = 0 WHERE key = @key AND slot = @slot AND owner = @owner',
  unknown:
    'UPDATE slots SET busy_until = min(busy_until, max(@now, busy_until - hold_ms + window_ms) + window_ms), owner = 0 WHERE key = @key AND slot = @slot AND owner = @owner',
};

export class SqliteBudgetSlots implements BudgetStore {
  readonly immediate = true;
  private readonly s;
  private readonly clock: Clock;
  /** Since when takes have found the file locked. */
  private lockedSince: number | undefined;
  /** A write failed (a full disk): the run goes on by its own budget, as said once. */
  private broken = false;
  private readonly said = new Set<string>();

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly path: string,
    private readonly key: string,
    private readonly options: SlotsOptions,
  ) {
    this.clock = options.clock ?? realClock;
    const plucked = new Set(['held', 'rows', 'inFlight']);
    this.s = Object.fromEntries(
      Object.entries(SQL).map(([k, sql]) => [k, plucked.has(k) ? db.prepare(sql).pluck() : db.prepare(sql)]),
    ) as Record<keyof typeof SQL, BetterSqlite3.Statement>;
  }

  /**
   * Opens (creating, 0700/0600) the slots in `dir` for `key`. Throws BudgetUnusable for a path that is
   * not a file of its own, a StorageError for a damaged file (it holds busy slots: forgetting them could
   * send past the rate, so nothing is sent until it is removed), or the system's error.
   */
  static open(dir: string, key: string, options: SlotsOptions): SqliteBudgetSlots {
    makeFolders(dir, 0o700);
    const path = join(dir, SLOTS_FILE);
    // A symbolic link planted at one of its names is refused (exit 2), never written through.
    refuseLinks([path, ...SQLITE_SIDES.map((side) => path + side)]);
    for (const side of [path, `${path}-journal`]) {
      const problem = unusable(side, lstatSync(side, { throwIfNoEntry: false }));
      if (problem !== undefined) throw new BudgetUnusable(problem);
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
        'CREATE TABLE IF NOT EXISTS slots (key TEXT NOT NULL, slot INTEGER NOT NULL, busy_until REAL NOT NULL, window_ms REAL NOT NULL, hold_ms REAL NOT NULL, owner INTEGER NOT NULL, PRIMARY KEY (key, slot)) WITHOUT ROWID',
      );
      const verdict = db.pragma('quick_check', { simple: true });
      if (verdict !== 'ok') throw Object.assign(new Error(`quick_check: ${String(verdict)}`), { code: 'SQLITE_CORRUPT' });
      db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 50}`);
      return new SqliteBudgetSlots(db, path, key, options);
    } catch (err) {
      db?.close();
      const code = errorCode(err) ?? '';
      if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
        throw new BudgetDamaged(
          `the request budget's file ${path} is damaged (${code}); it holds only the budget's slots: remove it once no other campaign-sync run with this key is running, and run again`,
          { code },
        );
      }
      throw err;
    }
  }

  take(count: number, windowMs: number): SlotTake {
    if (this.broken) return { slot: -1, owner: 0 };
    const now = this.clock.now();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      if (errorCode(err)?.startsWith('SQLITE_BUSY') !== true) return this.failed(err);
      this.lockedSince ??= now;
      if (now - this.lockedSince >= LOCKED_SAY_MS) {
        this.say(
          'locked',
          `the request budget waits: ${this.path} has been locked by another program for ${LOCKED_SAY_MS / 1000} s (an sqlite3 shell left in a transaction?); nothing is sent until it is released`,
        );
      }
      return { waitMs: LOCKED_RETRY_MS, inFlight: false };
    }
    this.lockedSince = undefined;
    try {
      const p = { key: this.key, now, window: windowMs, count };
      this.s.clamp.run(p);
      const held = this.s.held.get(p) as number;
      const first = this.s.first.get({ ...p, held }) as { slot: number; free_at: number } | undefined;
      let slot = first !== undefined && first.free_at <= now ? first.slot : undefined;
      // Never-used rows are made as needed, numbered on: the key's rows are 0..n-1.
      const rows = this.s.rows.get(p) as number;
      if (slot === undefined && rows < count) slot = rows;
      let out: SlotTake;
      if (slot === undefined) {
        const inFlight = (this.s.inFlight.get(p) as number) > 0;
        out = { waitMs: Math.max(1, (first?.free_at ?? now) - now), inFlight };
      } else {
        const owner = randomInt(1, 2 ** 47);
        this.s.take.run({ key: this.key, slot, now, held, hold: Math.max(this.options.timeoutMs, held) + held, owner });
        out = { slot, owner };
      }
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      return this.failed(err);
    }
  }

  end(loan: SlotLoan, answered: boolean): void {
    if (loan.slot < 0 || this.broken) return;
    try {
      (answered ? this.s.answered : this.s.unknown).run({ key: this.key, slot: loan.slot, owner: loan.owner, now: this.clock.now() });
    } catch {
      // Not written (locked, a full disk): the row stays busy as taken, its longest hold.
    }
  }

  close(): void {
    this.db.close();
  }

  /**
   * A write that failed (a full disk, an I/O error): the others stop seeing this run's requests,
   * which go on by this process's own budget, as said once.
   */
  private failed(err: unknown): SlotTake {
    this.broken = true;
    this.say(
      'write',
      `the request budget is no longer shared with other runs: ${this.path} could not be written (${errorCode(err) ?? 'error'}); this run's requests from now on are not counted by the others`,
    );
    return { slot: -1, owner: 0 };
  }

  private say(what: string, text: string): void {
    if (this.said.has(what)) return;
    this.said.add(what);
    this.options.warn?.(text);
  }
}

/** What is at `path`, in words, when it is not a plain file of its own (nothing there: undefined). */
function unusable(path: string, stat: Stats | undefined): string | undefined {
  if (stat === undefined) return undefined;
  const fix = 'remove it or move it away to share the budget again';
  if (!stat.isFile()) return `${path} is not a file (a folder, a named pipe or a device): ${fix}`;
  if (stat.nlink > 1) return `${path} has ${stat.nlink} names (hard links); the budget is only written to a file of its own: ${fix}`;
  return undefined;
}

/** Throws BudgetUnusable when the file at `path` holds tables other than ours (read through a read-only connection). */
function checkOurs(path: string): void {
  const probe = new Database(path, { readonly: true, fileMustExist: true });
  let foreign: string[];
  try {
    foreign = probe.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'slots' LIMIT 3").pluck().all() as string[];
  } finally {
    probe.close();
  }
  const what = `${path} holds tables that are not the budget's (${foreign.join(', ')}): another program's database`;
  if (foreign.length > 0) throw new BudgetUnusable(`${what}; move it away to share the budget again`);
}
