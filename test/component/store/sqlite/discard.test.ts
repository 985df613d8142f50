/**
 * What a failed first run takes back, and what it must not: a database it created goes only while it
 * holds nothing and no other connection has it open; a lock file goes only when its remover created
 * it, and a process that opened that file just before it went takes the lock on the file there now,
 * never on the removed one (where it would hold a lock nobody else can see). The commands' side:
 * test/component/commands/first-pull.test.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockedError } from '../../../../src/errors.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { discardBareDatabase, isBare } from '../../../../src/store/sqlite/discard.js';
import { Database } from '../../../../src/store/sqlite/driver.js';
import { lockSeams, RunLock } from '../../../../src/store/sqlite/run-lock.js';
import { tempDir } from '../../../helpers/index.js';

const linux = process.platform === 'linux';

/** The POSIX locks this process holds on the file at `path` (Linux: /proc/locks, by inode). */
function locksOn(path: string): number {
  const { ino } = statSync(path);
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((l) => l.includes(` ${process.pid} `) && l.includes(`:${ino} `)).length;
}

describe('a database a failed run created', () => {
  it('goes with its -wal and -shm while it is bare and no other connection has it open', () => {
    const dir = tempDir();
    const path = join(dir, 'm.db');
    const db = openDatabase(path);
    expect(isBare(db)).toBe(true);
    expect(discardBareDatabase(db, path)).toBe(true);
    expect(db.open).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('stays while another connection (a status reading it) has it open, and goes once it closed', () => {
    const dir = tempDir();
    const path = join(dir, 'm.db');
    const db = openDatabase(path);
    const reader = new Database(path, { readonly: true });
    reader.prepare('SELECT count(*) FROM campaigns').get();
    expect(discardBareDatabase(db, path)).toBe(false);
    expect(db.open).toBe(true);
    expect(existsSync(path)).toBe(true);
    // Still a working WAL mirror for the reader and for this connection.
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(reader.prepare('SELECT count(*) FROM campaigns').pluck().get()).toBe(0);
    reader.close();
    expect(discardBareDatabase(db, path)).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('stays when it holds anything a run committed: a campaign, a stream, an NDJSON file with bytes', () => {
    for (const sql of [
      "INSERT INTO campaigns (id, name, type, raw) VALUES ('c1', 'one', 'SESSION_COMPLETION', '{}')",
      "INSERT INTO sync_state (stream, campaign_id, endpoint) VALUES ('c1/session', 'c1', 'session')",
      "INSERT INTO ndjson_files (path, committed_bytes) VALUES ('/x/session_results.ndjson', 10)",
    ]) {
      const dir = tempDir();
      const path = join(dir, 'm.db');
      const db = openDatabase(path);
      db.exec(sql);
      expect(isBare(db), sql).toBe(false);
      expect(discardBareDatabase(db, path), sql).toBe(false);
      db.close();
      expect(existsSync(path), sql).toBe(true);
    }
    // A claimed file with nothing committed is no data.
    const path = join(tempDir(), 'm.db');
    const db = openDatabase(path);
    db.exec("INSERT INTO ndjson_files (path, committed_bytes) VALUES ('/x/session_results.ndjson', 0)");
    expect(isBare(db)).toBe(true);
    db.close();
  });
});

describe('the lock file of a failed run', () => {
  it('discard() removes the lock file and its .info when this process created them; a lock file that was there stays', () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const lock = RunLock.acquire(db);
    // The lock is a transaction of the lock file: its journal is there while it is held.
    expect(readdirSync(dir).sort()).toEqual(['m.db.lock', 'm.db.lock-journal', 'm.db.lock.info']);
    lock.discard();
    expect(readdirSync(dir)).toEqual([]);

    writeFileSync(`${db}.lock`, '');
    const again = RunLock.acquire(db);
    again.discard();
    expect(readdirSync(dir)).toEqual(['m.db.lock']);
  });

  it('a process that opened the lock file just before its creator removed it takes the lock on the file there now', () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const first = RunLock.acquire(db);
    let removed = false;
    // The second taker has the file open; the first gives up and takes its file back before the second locks it.
    lockSeams.opened = () => {
      if (removed) return;
      removed = true;
      first.discard();
    };
    let second: RunLock;
    try {
      second = RunLock.acquire(db);
    } finally {
      lockSeams.opened = undefined;
    }
    expect(removed).toBe(true);
    try {
      // The lock held is the one at the name: a third process is refused, not handed a lock of its own.
      expect(existsSync(`${db}.lock`)).toBe(true);
      expect(() => RunLock.acquire(db)).toThrow(LockedError);
      if (linux) expect(locksOn(`${db}.lock`)).toBeGreaterThan(0);
    } finally {
      second.release();
    }
  });

  it.skipIf(!linux)('a refused second take in the same process leaves the holder its lock on the file', () => {
    const db = join(tempDir(), 'm.db');
    const held = RunLock.acquire(db);
    try {
      expect(locksOn(`${db}.lock`)).toBeGreaterThan(0);
      expect(() => RunLock.acquire(db)).toThrow(LockedError);
      expect(locksOn(`${db}.lock`)).toBeGreaterThan(0);
    } finally {
      held.release();
    }
  });
});
