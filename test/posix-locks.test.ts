/**
 * An SQLite connection in WAL mode holds a POSIX lock on its database file for as long as it is
 * open; a descriptor of the same file opened and closed by the same process drops it (POSIX locks
 * are the process's). Without it, another process's close (`sqlite3 m.db` run by an analyst) took
 * itself for the last connection and deleted the WAL under the writer, whose later commits a kill -9
 * then lost (reproduced by hand on a bare connection: 100 of 200 rows). The budget ledger made itself
 * 0600 through a descriptor closed after its connection had opened: it must keep its lock. (A mirror
 * opened by store/db.ts keeps its lock too, checked by hand: a later statement takes it again.)
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BudgetLedger } from '../src/store/budget-ledger.js';
import { tempDir } from './helpers/index.js';

/** The POSIX locks this process holds on the file at `path` (Linux: /proc/locks, by inode). */
function locksOn(path: string): number {
  const { ino } = statSync(path);
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((l) => l.includes(` ${process.pid} `) && l.includes(`:${ino} `)).length;
}

describe('the budget ledger keeps its lock on its file', () => {
  it.skipIf(process.platform !== 'linux')('the budget ledger, new and existing', () => {
    const dir = tempDir();
    for (let i = 0; i < 2; i++) {
      const { ledger } = BudgetLedger.open(dir, 'k', 1000, Date.now());
      try {
        ledger.recent(0);
        expect(locksOn(join(dir, 'budget.db')), `open ${i + 1}`).toBeGreaterThan(0);
      } finally {
        ledger.close();
      }
    }
  });
});
