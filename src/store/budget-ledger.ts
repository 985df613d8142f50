/**
 * The request budget's memory across processes (core/rate.ts RequestLedger): when each recent
 * request of one key at one service was sent and ended, in a small SQLite file of the user's state
 * folder (`$XDG_STATE_HOME/campaign-sync/budget.db`, `~/.local/state/…`), shared by every database
 * and by processes running at the same time. A ledger is keyed by a fingerprint of the base URL and
 * the key (a hash: the key is never stored); each process's rows carry a random owner number, so
 * that it tells its own requests (which its budget counts itself) from everyone else's.
 *
 * It is advisory and disposable: writes are not fsynced (a power cut forgets the last second or so
 * of requests, which a 429 then corrects); a write that has to wait for another program's lock is
 * skipped rather than stalling the sync; a file that is not an SQLite database (a crash's damage) is
 * moved aside and a new ledger started; and a path that is not a plain file of its own (a symbolic
 * or hard link, a named pipe, another program's database) is left as it is and the ledger skipped,
 * with a warning either way, rather than failing the sync.
 */

import { randomInt } from 'node:crypto';
import { closeSync, constants, fchmodSync, lstatSync, openSync, renameSync, type Stats, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { keyFingerprint } from '../core/fingerprint.js';
import type { OtherRequests, RequestLedger } from '../core/rate.js';
import { errorCode } from '../errors.js';
import { makeFolders } from './folders.js';
import { Database } from './sqlite.js';

/** The ledger's file in its folder. */
export const LEDGER_FILE = 'budget.db';

/** The window a row written before rows kept their own (a release before this one) is kept for: a day. */
const OLD_ROW_WINDOW_MS = 86_400_000;

/**
 * How long a write waits for another connection's lock. The ledger's own writes take microseconds,
 * so this only runs out when another program holds it (`sqlite3 budget.db` left in a transaction):
 * then the write is skipped, and so are the next ones for BUSY_BACKOFF_MS. With a wait of 2 s at
 * each of a request's two writes, such a lock tripled a pull's time and froze the event loop long
 * enough for idle connections to the service to be closed under it.
 */
const BUSY_TIMEOUT_MS = 50;
const OPEN_BUSY_TIMEOUT_MS = 2_000;
const BUSY_BACKOFF_MS = 5_000;

/** Every row is kept at least this long after it ended, whatever the windows of the runs that prune. */
const KEEP_MS = 3_600_000;

/** A row's window, or a day for one written before rows kept their own. */
const ROW_WINDOW = `coalesce(window_ms, ${OLD_ROW_WINDOW_MS})`;

/**
 * Rows whose hold has passed for any reader: a window past their end, for their own window (a 30-day
 * budget's rows stay 30 days, whoever prunes), the window of the run that prunes (a 5/3s run opening
 * the ledger after a 5/1s one read its rows: it deleted them first, and sent 8 in 3 s), and an hour.
 * A row of unknown end (`sent_at` set: in flight, left by a killed process, given up on) ends a window
 * after it was sent, so it is kept until two windows after that (one window after the send, a
 * 1/1h budget's killed request stopped holding its slot half-way through: the next run sent at once).
 * Or later than two of their windows from now: a time that cannot be (a clock set back since, or one
 * that ran a year ahead). `@window`: the pruning run's window. The first term of each rule is implied
 * by the second: it lets the index on `ended_at` find the rows, so a prune reads what it deletes
 * rather than the whole file (245,000 rows an hour at a raised rate).
 */
const PRUNE = `DELETE FROM requests WHERE (ended_at < @now - max(@window, ${KEEP_MS}) AND CASE WHEN sent_at IS NULL THEN ended_at ELSE max(ended_at, sent_at + max(${ROW_WINDOW}, @window)) END + max(${ROW_WINDOW}, @window, ${KEEP_MS}) < @now) OR (ended_at > @now + 2 * @window AND ended_at > @now + 2 * max(${ROW_WINDOW}, @window))`;

/**
 * When the other owners' rows of one key ended, those after @since, for a reader whose window is
 * @window: a row of unknown end counts as ending a window after it was sent (a killed 100/1h run's
 * request holds a 5/3s run's slot for 6 s after it was sent, not for the hour, nor from every later
 * run's start), or when it was given up on if that is later; one still in flight (`ended_at` is its
 * send time) is flagged. Rows written by a release before `sent_at` keep their (provisional) end, and
 * those before `owner` are everyone else's. `ended_at > @since - @window` lets the index find them:
 * an end is never more than a window after `ended_at`.
 */
const OTHERS = `SELECT e, inflight FROM (SELECT CASE WHEN sent_at IS NULL THEN ended_at ELSE max(ended_at, sent_at + @window) END AS e, sent_at IS NOT NULL AND ended_at = sent_at AS inflight FROM requests WHERE fingerprint = @fingerprint AND ended_at > @since - @window AND owner IS NOT @owner) WHERE e > @since ORDER BY e`;

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

export class BudgetLedger implements RequestLedger {
  private readonly s;
  private writes = 0;
  private skipUntil = 0;
  /** This process's rows: its budget counts them itself. */
  private readonly owner = randomInt(1, 2 ** 47);
  /** The other owners' requests as last read, and the file's `data_version` then: read again only when another connection wrote. */
  private others: OtherRequests = { ends: [], inFlightUntil: Number.NEGATIVE_INFINITY };
  private version: number | undefined;

  /** Set once the first write failed for another reason than a lock: said once. */
  private broken = false;

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly path: string,
    private readonly fingerprint: string,
    private readonly windowMs: number,
    private readonly warn: ((text: string) => void) | undefined,
  ) {
    this.s = {
      others: db.prepare(OTHERS).raw(),
      version: db.prepare('PRAGMA data_version').pluck(),
      lock: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      begin: db.prepare('INSERT INTO requests (fingerprint, ended_at, window_ms, sent_at, owner) VALUES (?, ?, ?, ?, ?)'),
      // Only its own row: matched by key and send time too, since a row pruned meanwhile may have left its id to another.
      end: db.prepare(
        'UPDATE requests SET ended_at = @at, sent_at = @unknown WHERE id = @id AND fingerprint = @fingerprint AND sent_at = @sent',
      ),
      prune: db.prepare(PRUNE),
    };
  }

  /**
   * Opens (creating, 0700/0600) the ledger in `dir` for `fingerprint`, whose budget's window is
   * `windowMs` (kept with each row, so a row is pruned only after its own window). Throws a
   * LedgerUnusable, or the system's error, when it cannot be used. `warn` hears of a write that
   * fails later (a disk that fills during the run), once.
   */
  static open(dir: string, fingerprint: string, windowMs: number, now = Date.now(), warn?: (text: string) => void): OpenedLedger {
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
    return { ledger: new BudgetLedger(db, path, fingerprint, windowMs, warn), warnings };
  }

  reserve(sentAt: number, windowMs: number, take: (others: OtherRequests) => boolean): number | undefined {
    // Writes skipped for a while (another program held the lock): decided on what was last read.
    if (sentAt < this.skipUntil) return take(this.others) ? -1 : undefined;
    try {
      this.s.lock.run();
    } catch (err) {
      this.failed(err, sentAt);
      return take(this.others) ? -1 : undefined;
    }
    try {
      this.read(sentAt, windowMs);
      if (!take(this.others)) return undefined;
      // Advisory: a failed write (a full disk) costs the other processes their view of this request, never the request itself.
      try {
        const id = Number(this.s.begin.run(this.fingerprint, sentAt, this.windowMs, sentAt, this.owner).lastInsertRowid);
        if (++this.writes % PRUNE_EVERY === 0) this.s.prune.run({ now: sentAt, window: this.windowMs });
        this.s.commit.run();
        return id;
      } catch (err) {
        this.failed(err, sentAt);
        return -1;
      }
    } finally {
      if (this.db.inTransaction) {
        try {
          this.s.rollback.run();
        } catch {}
      }
    }
  }

  /** Reads the other owners' requests again when another connection has written since the last read. */
  private read(now: number, windowMs: number): void {
    try {
      const version = this.s.version.get() as number;
      if (version === this.version) return;
      const rows = this.s.others.all({
        fingerprint: this.fingerprint,
        owner: this.owner,
        since: now - windowMs,
        window: windowMs,
      }) as Array<[number, number]>;
      // An end later than a window from now (another process's longer window, or a clock set back
      // since) holds its slot one window from now, never longer: a row dated a year ahead had every
      // later run wait a year. Clamping keeps the order.
      const ends = rows.map(([e]) => Math.min(e, now + windowMs));
      let inFlightUntil = Number.NEGATIVE_INFINITY;
      rows.forEach(([, inflight], i) => {
        if (inflight === 1) inFlightUntil = ends[i] as number;
      });
      this.others = { ends, inFlightUntil };
      this.version = version;
    } catch {
      // Damage the checks at open did not reach: what was read last stands, and the next open moves the file aside.
    }
  }

  end(id: number, sentAt: number, at: number, answered: boolean): void {
    if (id < 0 || at < this.skipUntil) return;
    const unknown = answered ? null : sentAt;
    try {
      // Its row may be gone (pruned by a release with other rules, or by hand): the end is what the
      // next run needs most (8 requests in 1 s at 5/1s, against a server counting at completion).
      if (this.s.end.run({ at, unknown, id, fingerprint: this.fingerprint, sent: sentAt }).changes === 0) {
        this.s.begin.run(this.fingerprint, at, this.windowMs, unknown, this.owner);
      }
    } catch (err) {
      this.failed(err, at);
    }
  }

  close(): void {
    this.db.close();
  }

  /**
   * A write failed: skipped, with the next ones for a while (another program's lock, a full disk,
   * which may free up); any failure but a lock is said once, since the other processes no longer
   * see this one's requests (a disk that filled during a run failed every write silently, and the
   * next run drew 429s).
   */
  private failed(err: unknown, now: number): void {
    this.skipUntil = now + BUSY_BACKOFF_MS;
    const code = errorCode(err) ?? 'error';
    if (code.startsWith('SQLITE_BUSY') || this.broken) return;
    this.broken = true;
    this.warn?.(
      `the request budget is no longer shared with other runs: ${this.path} could not be written (${code}); this run's requests from now on are not counted by the others`,
    );
  }
}

/** A process moving a damaged ledger aside holds this; one older than this was left by a crash. */
const MOVING_STALE_MS = 10_000;

/**
 * Moves the damaged ledger `found` aside, under a lock file (`budget.db.moving`, O_EXCL): processes
 * starting together all find the damage, and a rename moves whatever is at the path by then, a new
 * ledger another process has just started included. Under the lock the file is checked to be still
 * the damaged one. Returns where it went, or undefined when another process is moving it (after a
 * short wait, so that the caller's second open finds the new ledger) or already has.
 */
function moveAside(path: string, found: Stats, now: number): string | undefined {
  const lock = `${path}.moving`;
  let fd: number;
  try {
    fd = openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if (errorCode(err) !== 'EEXIST') throw err;
    const held = lstatSync(lock, { throwIfNoEntry: false });
    if (held !== undefined && Date.now() - held.mtimeMs > MOVING_STALE_MS) {
      unlinkSync(lock);
      return moveAside(path, found, now);
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    return undefined;
  }
  try {
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
  } finally {
    closeSync(fd);
    unlinkSync(lock);
  }
}

/** What is at the ledger's path, in words, when it is not a plain file of its own. */
function unusable(path: string, stat: Stats): string | undefined {
  const fix = 'remove it or move it away to share the budget again';
  if (stat.isSymbolicLink()) return `${path} is a symbolic link; the ledger is only written as a file of its own: ${fix}`;
  if (!stat.isFile()) return `${path} is not a file (a folder, a named pipe or a device): ${fix}`;
  if (stat.nlink > 1) return `${path} has ${stat.nlink} names (hard links); the ledger is only written as a file of its own: ${fix}`;
  return undefined;
}

function openFile(path: string, now: number, windowMs: number): BetterSqlite3.Database {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  const problem = stat === undefined ? undefined : unusable(path, stat);
  if (problem !== undefined) throw new LedgerUnusable(problem);
  for (const suffix of ['-wal', '-shm']) {
    // SQLite refuses a link there itself, but then says only SQLITE_CANTOPEN: named here.
    const side = lstatSync(path + suffix, { throwIfNoEntry: false });
    if (side !== undefined && !side.isFile())
      throw new LedgerUnusable(`${path}${suffix} is not a file (a symbolic link?): remove it to share the budget again`);
  }
  // Never follows a link made meanwhile; never blocks on a named pipe put there meanwhile (open(2)
  // of a pipe with no reader waited for ever, deaf to SIGINT and SIGTERM). Made 0600 only once it is
  // known to be the ledger: another program's database keeps its mode. The descriptor is closed
  // before the ledger's connection opens: closed after, it dropped that connection's lock on the file
  // (POSIX locks are the process's, and any close releases them), and another process's close could
  // then take itself for the last connection and delete the WAL under it.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
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
  const db = new Database(path);
  try {
    // Opening waits as long as it did before: processes starting together create the table at once.
    db.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.exec(
      'CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, ended_at REAL NOT NULL, window_ms REAL, sent_at REAL, owner INTEGER); CREATE INDEX IF NOT EXISTS requests_by_key ON requests (fingerprint, ended_at); CREATE INDEX IF NOT EXISTS requests_by_end ON requests (ended_at);',
    );
    // Columns later releases added: `window_ms` (a row's own window), `sent_at` (set while its end is
    // unknown), `owner` (the process that wrote it).
    const columns = db.prepare("SELECT name FROM pragma_table_info('requests')").pluck().all() as string[];
    if (!columns.includes('window_ms')) db.exec('ALTER TABLE requests ADD COLUMN window_ms REAL');
    if (!columns.includes('sent_at')) db.exec('ALTER TABLE requests ADD COLUMN sent_at REAL');
    if (!columns.includes('owner')) db.exec('ALTER TABLE requests ADD COLUMN owner INTEGER');
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
  const probe = new Database(path, { readonly: true, fileMustExist: true });
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
