/**
 * The request budget's memory across processes (core/rate.ts RequestLedger): each recent request of
 * one key at one service, with when it was sent and ended and until when it holds a slot, in a small
 * SQLite file of the user's state folder (`$XDG_STATE_HOME/campaign-sync/budget.db`,
 * `~/.local/state/…`), shared by every database and by processes running at the same time. A ledger
 * is keyed by a fingerprint of the base URL and the key (a hash: the key is never stored); each
 * process's rows carry a random owner number, so that it tells its own requests (which its budget
 * counts itself) from everyone else's.
 *
 * It is advisory and disposable: writes are not fsynced (a power cut forgets the last second or so
 * of requests, which a 429 then corrects); a lock that another program holds for long (`sqlite3
 * budget.db` left in a transaction) is waited for, then worked around, never frozen on; a file that
 * is not an SQLite database (a crash's damage) is moved aside and a new ledger started; and a path
 * that is not a plain file of its own (a hard link, a named pipe, another program's database) is left
 * as it is and the ledger skipped, with a warning either way, rather than failing the sync. A
 * symbolic link at its name or beside it is refused (exit 2), as at every file campaign-sync writes.
 */

import { randomInt } from 'node:crypto';
import { closeSync, fchmodSync, lstatSync, renameSync, type Stats, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { keyFingerprint } from '../core/fingerprint.js';
import { LOCK_RETRY_MS, type OtherRequests, type RequestLedger } from '../core/rate.js';
import { errorCode, UsageError } from '../errors.js';
import { makeFolders } from './folders.js';
import { type HeldRow, HeldSlots } from './held-slots.js';
import { openPrivateFile, openSqlite, refuseLinks, SQLITE_SIDES } from './private-file.js';

/** The ledger's file in its folder. */
export const LEDGER_FILE = 'budget.db';

/** The window a row written before rows kept their own (a release before this one) is kept for: a day. */
const OLD_ROW_WINDOW_MS = 86_400_000;

/**
 * How long one attempt waits for the ledger's write lock. The processes' own transactions take tens
 * of microseconds, so a longer wait means another program holds it, or a process holding it is
 * stopped: a request then waits, retrying every LOCK_RETRY_MS (the event loop free meanwhile), for
 * LOCK_PATIENCE_MS; after that the run goes on without the ledger for BUSY_BACKOFF_MS at a time, with
 * one warning. Going on at once (after 50 ms) made processes busy on one core blind to each other
 * for 5 s: eight pulls at 200/1s drew 250-360 429s. A lock held at open is waited for OPEN_BUSY_TIMEOUT_MS.
 */
const BUSY_TIMEOUT_MS = 10;
const OPEN_BUSY_TIMEOUT_MS = 2_000;
const BUSY_BACKOFF_MS = 5_000;
const LOCK_PATIENCE_MS = 10_000;
const CLOSE_BUSY_TIMEOUT_MS = 500;

/** Every row is kept at least this long past its hold, whatever the windows of the runs that prune. */
const KEEP_MS = 3_600_000;

/**
 * Until when a request holds a slot, by its writer's rule (`hold_until`), with `window` its budget's
 * window up to an hour: a window after it ended; one of unknown end, a window after the later of its
 * give-up and a window after its send; one still in flight, a window after the longer of its window
 * and its writer's --timeout (at most KEEP_MS) from its send, since a live process gives a request up
 * by then. (A slow answer in a live process is still in flight two windows after its send: held as a
 * killed one's, it stopped counting for the others then, and three pulls at 3/1s behind 0-3 s of
 * delay drew 2-4 429s.)
 */
function holdUntil(window: number, sentAt: number, endedAt: number | undefined, answered: boolean, timeoutMs: number): number {
  if (endedAt === undefined) return sentAt + Math.max(window, timeoutMs) + window;
  return (answered ? endedAt : Math.max(endedAt, sentAt + window)) + window;
}

/** A row's window as the others hold it: its own, up to an hour (a 100/30d run's killed request held a 5/6s run's slot 60 days). */
const ROW_WINDOW = `min(coalesce(window_ms, ${OLD_ROW_WINDOW_MS}), ${KEEP_MS})`;

/** The same rule in SQL, for rows written before `hold_until` was: as their writers' rules had it. */
const OLD_HOLD = `CASE WHEN sent_at IS NULL THEN ended_at + ${ROW_WINDOW} ELSE max(ended_at, sent_at + ${ROW_WINDOW}) + ${ROW_WINDOW} END`;

/**
 * Rows whose hold has passed for any reader, with their own window, an hour, and at least the window
 * of the run that prunes to spare (a reader with a longer window than their writer's holds them
 * longer: a 2/2d budget's rows stay two days, whoever prunes; a 5/3s run
 * opening the ledger after a 5/1s one read its rows: it deleted them first, and sent 8 in 3 s); or
 * later than two of their windows from now: a time that cannot be (a clock set back since, or one that
 * ran a year ahead). `@window`: the pruning run's window. The first term of each rule is implied by
 * the second (`hold_until` is never before `ended_at`): it lets the index on `ended_at` find the rows,
 * so a prune reads what it deletes rather than the whole file (245,000 rows an hour at a raised rate).
 * The row numbered last is kept whatever it holds: the next write is numbered after it, never with
 * a number a running process has read past (it would never see that row).
 */
const PRUNE = `DELETE FROM requests WHERE id IS NOT (SELECT id FROM requests ORDER BY seq DESC LIMIT 1) AND ((ended_at < @now - max(@window, ${KEEP_MS}) AND coalesce(hold_until, ${OLD_HOLD}) + max(coalesce(window_ms, ${OLD_ROW_WINDOW_MS}), @window, ${KEEP_MS}) < @now) OR (ended_at > @now + 2 * @window AND ended_at > @now + 2 * max(coalesce(window_ms, ${OLD_ROW_WINDOW_MS}), @window)))`;

/**
 * Until when the other owners' rows of one key hold a slot, for a reader whose window is @window:
 * their `hold_until`, so by the longer of the two windows (a 5/2s run counted a 10/4s one's requests
 * for 2 s only, and the two drew 429s from a 10/4s server), longer by the reader's window's excess
 * over theirs, twice for a row of unknown end (a window after its end, which is a window after its
 * send); a row from the future (a clock set back since it was written) as written, up to two
 * windows ahead, and one further ahead not at all (it cannot be). Not as if written now: a row
 * another process wrote while this one waited for the lock is a few milliseconds ahead of the time
 * this one asks at, and taken back to it, it held its slot that much too short (eight pulls at
 * 200/1s drew 8-16 429s).
 */
const HELD = `hold_until + max(0, @window - min(coalesce(window_ms, @window), ${KEEP_MS})) * (CASE WHEN sent_at IS NULL THEN 1 ELSE 2 END)`;
const ROW = `id, ${HELD} AS h, sent_at IS NOT NULL AND ended_at = sent_at AS inflight`;
const OTHERS_OF_KEY = `fingerprint = @fingerprint AND owner IS NOT @owner AND ended_at <= @now + 2 * max(coalesce(window_ms, 0), @window)`;
/** A first read: the rows that may hold a slot now (`hold_until > @now - 2 * @window` lets the index find them). */
const OTHERS_NOW = `SELECT ${ROW} FROM requests WHERE ${OTHERS_OF_KEY} AND hold_until > @now - 2 * @window`;
/**
 * Every later read: the rows written or changed since (store/held-slots.ts keeps the rest), by the
 * row numbers' index: left to choose, SQLite took the key's index and read every row of the key, an
 * hour of them (29 ms under the lock at 250,000 rows; two pulls at 500/1s ran at 140 a second).
 */
const OTHERS_SINCE = `SELECT ${ROW} FROM requests INDEXED BY requests_by_seq WHERE seq > @seq AND ${OTHERS_OF_KEY}`;
/** Each write numbers its row anew, in order (under the write lock): what a reader has seen is a number. */
const NEXT_SEQ = '(SELECT coalesce(max(seq), 0) + 1 FROM requests)';

/** The ledger's reads and prune, for the test of their query plans. */
export const LEDGER_QUERIES = { OTHERS_NOW, OTHERS_SINCE, PRUNE };

/** A process checks every this often that its ledger's path still names the file it has open. */
const MOVED_CHECK_MS = 2_000;

/** Ends not yet written (the lock was held) are kept up to this many, the newest. */
const MAX_PENDING_ENDS = 10_000;

/** A ledger file written this recently (ms) may be another process's new one, still being set up. */
const STARTING_MS = 1_000;

/** A long-running watch prunes every this many requests too (a row is ~100 bytes; 100/min is 15 MB a day). */
const PRUNE_EVERY = 1_000;

/** The ledger's key for a service and an API key; the key itself cannot be recovered from it. */
export function ledgerFingerprint(baseUrl: string, apiKey: string): string {
  // The same value as before core/fingerprint.ts: ledgers written by earlier releases stay in use.
  return keyFingerprint('budget', baseUrl, apiKey);
}

/** A path the ledger cannot use, left as it was found; the message says what is there and what to do. */
export class LedgerUnusable extends Error {
  readonly code = 'ELEDGER';
}

/** What `open` did besides opening, for the command to say once. */
export interface OpenedLedger {
  ledger: BudgetLedger;
  /** A damaged ledger moved aside, with where it went. */
  warnings: string[];
}

/** An end of this process's requests, written when the ledger's lock allows. */
interface End {
  id: number;
  sentAt: number;
  at: number;
  answered: boolean;
}

/** What a ledger is told of its run besides its window. */
export interface LedgerOptions {
  /** The client's --timeout: how long this process keeps a request in flight at most (in-flight rows hold for it). */
  timeoutMs?: number | undefined;
  /** Hears of what goes wrong after the open (a write that fails, a lock held for long, the file replaced), once each. */
  warn?: ((text: string) => void) | undefined;
}

export class BudgetLedger implements RequestLedger {
  private s;
  private writes = 0;
  /** Until then the run goes on without the ledger (a lock held past LOCK_PATIENCE_MS, a failed write). */
  private skipUntil = 0;
  /** Since when the lock could not be had: a request waits for it that long at most. */
  private lockedSince: number | undefined;
  /** When the lock was last tried. */
  private triedAt = Number.NEGATIVE_INFINITY;
  /** This process's rows: its budget counts them itself. */
  private readonly owner = randomInt(1, 2 ** 47);
  /** The other owners' requests as last read, and the file's `data_version` and the last row number then: read again only when another connection wrote. */
  private held = new HeldSlots();
  private others: OtherRequests = { holds: [], inFlightUntil: Number.NEGATIVE_INFINITY, locked: false };
  private version: number | undefined;
  private seq: number | undefined;
  /** The latest wall time the others' rows were read at (a clock set back is seen against it). */
  private readAt = Number.NEGATIVE_INFINITY;
  /** Ends that found the lock held, written with the next request (in order). */
  private pending: End[] = [];
  /** The window the budget writes with (its margin included, up to KEEP_MS): set by `reserve`. */
  private holdWindow: number;
  private readonly timeoutMs: number;
  /** The file this connection has open, and when the path was last checked to name it. */
  private file: { dev: number; ino: number } | undefined;
  private checkedAt = 0;
  /** What has been said already: each once. */
  private readonly said = new Set<string>();

  private constructor(
    private db: BetterSqlite3.Database,
    private readonly path: string,
    private readonly fingerprint: string,
    private readonly windowMs: number,
    private readonly options: LedgerOptions,
  ) {
    this.holdWindow = Math.min(windowMs, KEEP_MS);
    // A request without a timeout is held as one of an hour at most.
    this.timeoutMs = Math.min(options.timeoutMs ?? 0, KEEP_MS);
    this.s = this.statements(db);
    this.file = identity(path);
    this.adoptOldRows(db);
  }

  /** Rows a release before `hold_until` wrote since (one may be running): holding by their writers' rules. */
  private adoptOldRows(db: BetterSqlite3.Database): void {
    try {
      db.prepare(`UPDATE requests SET hold_until = ${OLD_HOLD} WHERE fingerprint = ? AND hold_until IS NULL`).run(this.fingerprint);
    } catch {}
  }

  private statements(db: BetterSqlite3.Database) {
    return {
      othersNow: db.prepare(OTHERS_NOW).raw(),
      othersSince: db.prepare(OTHERS_SINCE).raw(),
      lastSeq: db.prepare('SELECT max(seq) FROM requests').pluck(),
      version: db.prepare('PRAGMA data_version').pluck(),
      lock: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      begin: db.prepare(
        `INSERT INTO requests (fingerprint, ended_at, window_ms, sent_at, owner, hold_until, seq) VALUES (@fingerprint, @ended, @window, @sent, @owner, @hold, ${NEXT_SEQ})`,
      ),
      // Only its own row: matched by key and send time too, since a row pruned meanwhile may have left its id to another.
      end: db.prepare(
        `UPDATE requests SET ended_at = @ended, sent_at = @sent, hold_until = @hold, seq = ${NEXT_SEQ} WHERE id = @id AND fingerprint = @fingerprint AND sent_at = @sentBefore`,
      ),
      prune: db.prepare(PRUNE),
    };
  }

  /**
   * Opens (creating, 0700/0600) the ledger in `dir` for `fingerprint`, whose budget's window is
   * `windowMs` (kept with each row, so a row is pruned only after its own window). Throws a
   * LedgerUnusable, or the system's error, when it cannot be used.
   */
  static open(dir: string, fingerprint: string, windowMs: number, now = Date.now(), options: LedgerOptions = {}): OpenedLedger {
    makeFolders(dir, 0o700);
    const path = join(dir, LEDGER_FILE);
    const warnings: string[] = [];
    let db: BetterSqlite3.Database;
    const found = lstatSync(path, { throwIfNoEntry: false });
    try {
      db = openFile(path, now, windowMs);
    } catch (err) {
      // Another process may have moved a damaged file aside meanwhile and started a new one (SQLite
      // then fails on the file gone from under it): what is there now is opened as it is; moving it
      // would take a new ledger from under its writer.
      const still = lstatSync(path, { throwIfNoEntry: false });
      const same = found !== undefined && still?.ino === found.ino && still.dev === found.dev;
      // A file written in the last second, or empty, is one another process has just created and is
      // starting: moved aside, it took the new ledger from under its writer (seen with six processes
      // starting together on a damaged ledger). It is opened again; a damaged one is older.
      const starting = still?.isFile() === true && (still.size === 0 || Date.now() - still.mtimeMs < STARTING_MS);
      if (!isDamaged(err) && !starting && (same || found === undefined)) throw err;
      // Only ever a ledger, and a disposable one: moved aside (not deleted), and a new one started.
      if (same && !starting && found !== undefined) {
        const aside = moveAside(path, found, now);
        if (aside !== undefined) {
          warnings.push(
            `the request budget's ledger ${path} could not be read (${errorCode(err)}): moved aside to ${aside}, and a new one started`,
          );
        }
      }
      db = openFile(path, now, windowMs);
    }
    return { ledger: new BudgetLedger(db, path, fingerprint, windowMs, options), warnings };
  }

  reserve(sentAt: number, windowMs: number, take: (others: OtherRequests) => boolean): number | undefined {
    this.holdWindow = Math.min(windowMs, KEEP_MS);
    this.checkMoved(sentAt);
    // Going on without the ledger for a while: decided on what was last read, nothing recorded.
    if (sentAt < this.skipUntil) return take(this.others) ? -1 : undefined;
    // Locked: one look per LOCK_RETRY_MS for the whole process, and without a wait (each waiting
    // stream's own 10 ms wait every 25 ms kept the event loop blocked most of the time).
    if (this.lockedSince !== undefined && sentAt >= this.triedAt && sentAt - this.triedAt < LOCK_RETRY_MS) {
      take({ ...this.others, locked: true });
      return undefined;
    }
    this.triedAt = sentAt;
    try {
      this.s.lock.run();
    } catch (err) {
      if (!isBusy(err)) {
        this.failed(err, sentAt);
        return take(this.others) ? -1 : undefined;
      }
      // Held by another: this request waits for it (the others may be sending), up to the patience.
      if (this.lockedSince === undefined) {
        this.lockedSince = sentAt;
        this.db.pragma('busy_timeout = 0');
      }
      if (sentAt - this.lockedSince < LOCK_PATIENCE_MS) {
        take({ ...this.others, locked: true });
        return undefined;
      }
      this.failed(err, sentAt);
      return take(this.others) ? -1 : undefined;
    }
    if (this.lockedSince !== undefined) {
      this.lockedSince = undefined;
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
    let taken = false;
    try {
      this.flush();
      this.read(sentAt, windowMs);
      let id: number | undefined;
      taken = take(this.others);
      if (taken) {
        const hold = holdUntil(this.holdWindow, sentAt, undefined, false, this.timeoutMs);
        id = Number(
          this.s.begin.run({ fingerprint: this.fingerprint, ended: sentAt, window: windowMs, sent: sentAt, owner: this.owner, hold })
            .lastInsertRowid,
        );
        if (++this.writes % PRUNE_EVERY === 0) this.s.prune.run({ now: sentAt, window: this.windowMs });
      }
      this.s.commit.run();
      return id;
    } catch (err) {
      // Advisory: a failed write (a full disk) costs the other processes their view of this request,
      // never the request itself. `take` has said yes when it got that far.
      this.failed(err, sentAt);
      return taken ? -1 : undefined;
    } finally {
      if (this.db.inTransaction) {
        try {
          this.s.rollback.run();
        } catch {}
      }
    }
  }

  /**
   * Reads what the other owners wrote since the last read, when another connection has written
   * (under the write lock: nothing is written meanwhile). The first read takes every row that may
   * hold a slot now.
   */
  private read(now: number, windowMs: number): void {
    try {
      const version = this.s.version.get() as number;
      // The wall clock set back by more than a window: what was read holds by times that are now
      // ahead, for the length of the step (one process sent nothing for the hour). Read afresh, as the
      // first time, which leaves out rows more than two windows ahead.
      if (now < this.readAt - windowMs) this.forget();
      if (version !== this.version) {
        const last = (this.s.lastSeq.get() as number | null) ?? 0;
        // Numbers that went back (a file replaced under the same connection) cannot be read from.
        if (this.seq !== undefined && last < this.seq) this.forget();
        const params = { fingerprint: this.fingerprint, owner: this.owner, now, window: windowMs, seq: this.seq ?? 0 };
        const rows = (this.seq === undefined ? this.s.othersNow : this.s.othersSince).all(params) as HeldRow[];
        this.seq = last;
        this.version = version;
        this.held.apply(rows, now);
      }
      this.readAt = Math.max(this.readAt, now);
      this.others = this.held.view(now);
    } catch {
      // Damage the checks at open did not reach: what was read last stands, and the next open moves the file aside.
    }
  }

  end(id: number, sentAt: number, at: number, answered: boolean): void {
    if (id < 0) return;
    const end = { id, sentAt, at, answered };
    // After those waiting for the lock: the order of a request's two writes is kept.
    if (this.pending.length > 0 || at < this.skipUntil) {
      this.queue(end);
      return;
    }
    try {
      this.write(end);
    } catch (err) {
      if (isBusy(err)) this.queue(end);
      else this.failed(err, at);
    }
  }

  close(): void {
    if (this.pending.length > 0) {
      // At exit, a short wait: ends not written hold their slots longer, they cost no 429.
      try {
        this.db.pragma(`busy_timeout = ${CLOSE_BUSY_TIMEOUT_MS}`);
        this.db.transaction(() => this.flush())();
      } catch {}
    }
    this.db.close();
  }

  private queue(end: End): void {
    this.pending.push(end);
    if (this.pending.length > MAX_PENDING_ENDS) this.pending.splice(0, this.pending.length - MAX_PENDING_ENDS);
  }

  private flush(): void {
    for (const end of this.pending) this.write(end);
    this.pending = [];
  }

  private write({ id, sentAt, at, answered }: End): void {
    const sent = answered ? null : sentAt;
    const hold = holdUntil(this.holdWindow, sentAt, at, answered, this.timeoutMs);
    // Its row may be gone (pruned by a release with other rules, or by hand): the end is what the
    // next run needs most (8 requests in 1 s at 5/1s, against a server counting at completion).
    const row = { ended: at, sent, hold, id, fingerprint: this.fingerprint, sentBefore: sentAt };
    if (this.s.end.run(row).changes === 0) {
      this.s.begin.run({ fingerprint: this.fingerprint, ended: at, window: this.holdWindow, sent, owner: this.owner, hold });
    }
  }

  /**
   * Every MOVED_CHECK_MS, that the path still names the file this connection has open: a ledger
   * removed or renamed during a run left the processes that had it open writing to one file, and
   * those started later to a new one, blind to each other. Opened again at its path when not.
   */
  private checkMoved(now: number): void {
    if (now - this.checkedAt < MOVED_CHECK_MS && now >= this.checkedAt) return;
    this.checkedAt = now;
    const found = identity(this.path);
    if (found !== undefined && this.file !== undefined && found.dev === this.file.dev && found.ino === this.file.ino) return;
    let db: BetterSqlite3.Database;
    try {
      db = openFile(this.path, now, this.windowMs);
    } catch (err) {
      const why =
        err instanceof LedgerUnusable || err instanceof UsageError
          ? err.message
          : `${this.path} could not be opened (${errorCode(err) ?? 'error'})`;
      this.say(
        'moved',
        `the request budget's ledger was removed or replaced during the run, and ${why}: this run's requests are not counted by the others`,
      );
      this.file = found;
      return;
    }
    this.flushOrDrop();
    this.db.close();
    this.db = db;
    this.s = this.statements(db);
    this.adoptOldRows(db);
    this.file = identity(this.path);
    this.forget();
    this.say('moved', `the request budget's ledger ${this.path} was removed or replaced during the run: opened again`);
  }

  /** Forgets what was read of the others: the next read is a first one. */
  private forget(): void {
    this.version = undefined;
    this.seq = undefined;
    this.readAt = Number.NEGATIVE_INFINITY;
    this.held = new HeldSlots();
    this.others = { holds: [], inFlightUntil: Number.NEGATIVE_INFINITY, locked: false };
  }

  /** Writes what is pending to the file about to be left, if it can at once. */
  private flushOrDrop(): void {
    try {
      this.db.transaction(() => this.flush())();
    } catch {
      this.pending = [];
    }
  }

  /**
   * The ledger is left out for a while (a lock held past the patience, a write that failed), with the
   * next writes: the others stop seeing this run's requests meanwhile, which is said once.
   */
  private failed(err: unknown, now: number): void {
    this.skipUntil = now + BUSY_BACKOFF_MS;
    const code = errorCode(err) ?? 'error';
    if (isBusy(err)) {
      this.say(
        'locked',
        `the request budget is not shared with other runs for now: ${this.path} has been locked by another program for ${LOCK_PATIENCE_MS / 1000} s (${code}; an sqlite3 shell left in a transaction?); tried again every ${BUSY_BACKOFF_MS / 1000} s`,
      );
      return;
    }
    this.say(
      'write',
      `the request budget is no longer shared with other runs: ${this.path} could not be written (${code}); this run's requests from now on are not counted by the others`,
    );
  }

  private say(what: string, text: string): void {
    if (this.said.has(what)) return;
    this.said.add(what);
    this.options.warn?.(text);
  }
}

/** The file at `path`, by device and inode (undefined: nothing there). */
function identity(path: string): { dev: number; ino: number } | undefined {
  const st = lstatSync(path, { throwIfNoEntry: false });
  return st === undefined ? undefined : { dev: st.dev, ino: st.ino };
}

function isBusy(err: unknown): boolean {
  return errorCode(err)?.startsWith('SQLITE_BUSY') === true;
}

/** A process replacing the ledger's file holds `budget.db.moving`; one older than this was left by a crash. */
const MOVING_STALE_MS = 10_000;

/**
 * Runs `work` holding the lock file `budget.db.moving` (O_EXCL), which a process holds while it
 * replaces the file at the ledger's path; one older than MOVING_STALE_MS was left by a crash and is
 * taken over. Held by another process: waits a moment (that process is done by then) and returns
 * undefined.
 */
function withMovingLock<T>(path: string, work: () => T): T | undefined {
  const lock = `${path}.moving`;
  let fd: number;
  try {
    fd = openPrivateFile(lock, { exclusive: true });
  } catch (err) {
    if (errorCode(err) !== 'EEXIST') throw err;
    const held = lstatSync(lock, { throwIfNoEntry: false });
    if (held !== undefined && Date.now() - held.mtimeMs > MOVING_STALE_MS) {
      unlinkSync(lock);
      return withMovingLock(path, work);
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    return undefined;
  }
  try {
    return work();
  } finally {
    closeSync(fd);
    unlinkSync(lock);
  }
}

/**
 * Moves the damaged ledger `found` aside, under the lock file: processes starting together all find
 * the damage, and a rename moves whatever is at the path by then, a new ledger another process has
 * just started included. Under the lock the file is checked to be still the damaged one. Returns
 * where it went, or undefined when another process is moving it or already has.
 */
function moveAside(path: string, found: Stats, now: number): string | undefined {
  return withMovingLock(path, () => {
    const still = lstatSync(path, { throwIfNoEntry: false });
    if (still === undefined || still.ino !== found.ino || still.dev !== found.dev) return undefined;
    const aside = `${path}.damaged-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
    renameSync(path, aside);
    for (const suffix of ['-wal', '-shm']) {
      try {
        renameSync(path + suffix, aside + suffix);
      } catch {}
    }
    return aside;
  });
}

/**
 * A `-wal` or `-shm` left without its database (`budget.db` removed by hand while processes had it
 * open) is removed before a new ledger starts there, under the lock file, and the new file is
 * created under it too: joined to them, a new file met a log and a shared memory of another file's,
 * which the processes still writing that file had mapped (a pull died of SIGBUS; others drew 9-55
 * 429s). Those processes keep theirs: removing a name leaves the open file.
 */
function startWithoutOrphans(path: string): void {
  const sides = ['-wal', '-shm'].filter((suffix) => lstatSync(path + suffix, { throwIfNoEntry: false }) !== undefined);
  if (sides.length === 0) return;
  withMovingLock(path, () => {
    if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) return;
    for (const suffix of sides) {
      try {
        unlinkSync(path + suffix);
      } catch {}
    }
    closeSync(openPrivateFile(path, { exclusive: true }));
  });
}

/** What is at the ledger's path, in words, when it is not a plain file of its own. */
function unusable(path: string, stat: Stats): string | undefined {
  const fix = 'remove it or move it away to share the budget again';
  if (!stat.isFile()) return `${path} is not a file (a folder, a named pipe or a device): ${fix}`;
  if (stat.nlink > 1) return `${path} has ${stat.nlink} names (hard links); the ledger is only written as a file of its own: ${fix}`;
  return undefined;
}

function openFile(path: string, now: number, windowMs: number): BetterSqlite3.Database {
  // A link at the ledger's name or beside it is refused (exit 2), as at every file campaign-sync writes.
  refuseLinks([path, `${path}.moving`, ...SQLITE_SIDES.map((side) => path + side)]);
  const stat = lstatSync(path, { throwIfNoEntry: false });
  const problem = stat === undefined ? undefined : unusable(path, stat);
  if (problem !== undefined) throw new LedgerUnusable(problem);
  for (const suffix of ['-wal', '-shm']) {
    // SQLite refuses anything but a file there itself, but then says only SQLITE_CANTOPEN: named here.
    const side = lstatSync(path + suffix, { throwIfNoEntry: false });
    if (side !== undefined && !side.isFile())
      throw new LedgerUnusable(`${path}${suffix} is not a file: remove it to share the budget again`);
  }
  if (stat === undefined) startWithoutOrphans(path);
  // Never follows a link made meanwhile; never blocks on a named pipe put there meanwhile (open(2)
  // of a pipe with no reader waited for ever, deaf to SIGINT and SIGTERM). Made 0600 only once it is
  // known to be the ledger: another program's database keeps its mode. The descriptor is closed
  // before the ledger's connection opens: closed after, it dropped that connection's lock on the file
  // (POSIX locks are the process's, and any close releases them), and another process's close could
  // then take itself for the last connection and delete the WAL under it.
  let fd: number;
  try {
    fd = openPrivateFile(path, { read: true, keepMode: true });
  } catch (err) {
    if (errorCode(err) === 'ENOTREG')
      throw new LedgerUnusable(
        `${path} is not a file (a folder, a named pipe or a device): remove it or move it away to share the budget again`,
      );
    throw err;
  }
  try {
    const foreign = foreignTables(path);
    if (foreign.length > 0) {
      throw new LedgerUnusable(
        `${path} holds tables that are not the ledger's (${foreign.slice(0, 3).join(', ')}): another program's database; move it away to share the budget again`,
      );
    }
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
  const db = openSqlite(path, { fileMustExist: true });
  try {
    // Opening waits as long as it did before: processes starting together create the table at once.
    db.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.exec(
      'CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, ended_at REAL NOT NULL, window_ms REAL, sent_at REAL, owner INTEGER, hold_until REAL, seq INTEGER); CREATE INDEX IF NOT EXISTS requests_by_end ON requests (ended_at);',
    );
    // Columns later releases added: `window_ms` (a row's own window), `sent_at` (set while its end is
    // unknown), `owner` (the process that wrote it), `hold_until` (until when it holds a slot), `seq`
    // (the order rows were written or changed in).
    const columns = db.prepare("SELECT name FROM pragma_table_info('requests')").pluck().all() as string[];
    if (!columns.includes('window_ms')) db.exec('ALTER TABLE requests ADD COLUMN window_ms REAL');
    if (!columns.includes('sent_at')) db.exec('ALTER TABLE requests ADD COLUMN sent_at REAL');
    if (!columns.includes('owner')) db.exec('ALTER TABLE requests ADD COLUMN owner INTEGER');
    if (!columns.includes('hold_until')) {
      // Rows of a release before it hold by their writers' rules; the index the readers use replaces
      // the one by key and end time, which nothing reads any more.
      db.exec(
        `ALTER TABLE requests ADD COLUMN hold_until REAL; UPDATE requests SET hold_until = ${OLD_HOLD}; DROP INDEX IF EXISTS requests_by_key;`,
      );
    }
    if (!columns.includes('seq')) db.exec('ALTER TABLE requests ADD COLUMN seq INTEGER');
    db.exec(
      'CREATE INDEX IF NOT EXISTS requests_by_hold ON requests (fingerprint, hold_until); CREATE INDEX IF NOT EXISTS requests_by_seq ON requests (seq)',
    );
    db.prepare(PRUNE).run({ now, window: windowMs });
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Damage that no statement above reached (an index page: the first read of it failed every later
    // command with SQLITE_CORRUPT, naming no file): found here, and the file is moved aside. The
    // ledger holds a few hundred rows at most, so the check costs well under a millisecond.
    const verdict = db.pragma('quick_check', { simple: true });
    if (verdict !== 'ok') throw Object.assign(new Error(`quick_check: ${String(verdict)}`), { code: 'SQLITE_CORRUPT' });
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * The tables at `path` other than the ledger's, read through a read-only connection that is closed
 * again at once: another program's database is left as it was.
 */
function foreignTables(path: string): string[] {
  const probe = openSqlite(path, { readonly: true, fileMustExist: true });
  try {
    probe.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
    const tables = probe
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
      .pluck()
      .all() as string[];
    return tables.filter((t) => t !== 'requests');
  } finally {
    probe.close();
  }
}

/** A file SQLite cannot read as a database: damaged by a crash (writes are not synced), or garbage. */
function isDamaged(err: unknown): boolean {
  const code = errorCode(err) ?? '';
  return code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT');
}
