/**
 * The request budget's memory across processes (core/rate.ts RequestLedger): when each recent
 * request of one key at one service ended, in a small SQLite file of the user's state folder
 * (`$XDG_STATE_HOME/campaign-sync/budget.db`, `~/.local/state/…`), shared by every database. A
 * ledger is keyed by a fingerprint of the base URL and the key (a hash: the key is never stored).
 *
 * It is advisory: writes are not fsynced (a power cut forgets the last second or so of requests,
 * which a 429 then corrects), and a ledger that cannot be opened (read-only home) is skipped with a
 * warning rather than failing the sync.
 */

import { chmodSync, closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { keyFingerprint } from '../core/fingerprint.js';
import type { RequestLedger } from '../core/rate.js';
import { makeFolders } from './folders.js';
import { Database } from './sqlite.js';

/** Rows older than this are pruned when a ledger opens: no rate window is longer. */
const KEEP_MS = 86_400_000;

/** The ledger's key for a service and an API key; the key itself cannot be recovered from it. */
export function ledgerFingerprint(baseUrl: string, apiKey: string): string {
  // The same value as before core/fingerprint.ts: ledgers written by earlier releases stay in use.
  return keyFingerprint('budget', baseUrl, apiKey);
}

export class BudgetLedger implements RequestLedger {
  private readonly s;

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly fingerprint: string,
  ) {
    this.s = {
      recent: db.prepare('SELECT ended_at FROM requests WHERE fingerprint = ? AND ended_at > ? ORDER BY ended_at').pluck(),
      begin: db.prepare('INSERT INTO requests (fingerprint, ended_at) VALUES (?, ?)'),
      end: db.prepare('UPDATE requests SET ended_at = ? WHERE id = ?'),
    };
  }

  /** Opens (creating, 0700/0600) the ledger in `dir` for `fingerprint`. Throws if the folder cannot be written. */
  static open(dir: string, fingerprint: string, now = Date.now()): BudgetLedger {
    makeFolders(dir, 0o700);
    const path = join(dir, 'budget.db');
    closeSync(openSync(path, 'a', 0o600));
    chmodSync(path, 0o600);
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = OFF');
      db.pragma('busy_timeout = 2000');
      db.exec(
        'CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, ended_at REAL NOT NULL); CREATE INDEX IF NOT EXISTS requests_by_key ON requests (fingerprint, ended_at);',
      );
      db.prepare('DELETE FROM requests WHERE ended_at < ?').run(now - KEEP_MS);
    } catch (err) {
      db.close();
      throw err;
    }
    return new BudgetLedger(db, fingerprint);
  }

  recent(since: number): number[] {
    return this.s.recent.all(this.fingerprint, since) as number[];
  }

  // Advisory: a failed write (a full disk, a lock held too long) costs the next process its view of
  // this request, never this request itself.
  begin(until: number): number {
    try {
      return Number(this.s.begin.run(this.fingerprint, until).lastInsertRowid);
    } catch {
      return -1;
    }
  }

  end(id: number, at: number): void {
    try {
      if (id >= 0) this.s.end.run(at, id);
    } catch {}
  }

  close(): void {
    this.db.close();
  }
}
