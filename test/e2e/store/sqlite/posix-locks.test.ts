/**
 * An SQLite connection in WAL mode holds POSIX locks on its database file and on its -shm for as long
 * as it is open; a descriptor of the same file opened and closed by the same process drops them
 * (POSIX locks are the process's, and any close releases them). Without them, another process's
 * close (an analyst's `sqlite3 m.db`, a cron pull ending) takes itself for the last connection: it
 * checkpoints the whole WAL into the file, ignoring everyone's read marks, and deletes the WAL. A
 * reader's snapshot then changed under it mid-read (below: a count of rows changed inside one read
 * transaction), and a writer's later commits went to a deleted file (a kill -9 lost them: 100 of 200
 * rows). SQLite 3.36 and later, on the other side, also
 * look for a reader's lock on the -shm; older ones (Ubuntu 20.04's sqlite3 is 3.31) only at the
 * file's. So nothing of ours opens and closes a descriptor of a database file, its run lock file, or
 * its -wal and -shm, while a connection of this process may have it open.
 */
import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockedError } from '../../../../src/errors.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { SQLITE_DRIVER } from '../../../../src/store/sqlite/driver.js';
import { RunLock } from '../../../../src/store/sqlite/run-lock.js';
import { tempDir } from '../../../helpers/index.js';

/** The POSIX locks this process holds on the file at `path` (Linux: /proc/locks, by inode). */
function locksOn(path: string): number {
  const { ino } = statSync(path);
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((l) => l.includes(` ${process.pid} `) && l.includes(`:${ino} `)).length;
}

const linux = process.platform === 'linux';

/** A mirror holding `n` campaigns, closed (its WAL checkpointed into the file). */
function mirror(n: number): string {
  const path = join(tempDir(), 'm.db');
  const db = openDatabase(path);
  const add = db.prepare('INSERT INTO campaigns (id, name, type, raw) VALUES (?, ?, ?, ?)');
  for (let i = 0; i < n; i++) add.run(`c${i}`, `campaign ${i}`, 'session', '{}');
  db.close();
  return path;
}

describe('a mirror’s connections keep their lock on its file', () => {
  it.skipIf(!linux)('export’s second and third read-only connections (the range checker, the helper thread)', () => {
    const path = mirror(3);
    const first = openDatabase(path, { mustExist: true, readonly: true });
    const more: ReturnType<typeof openDatabase>[] = [];
    try {
      first.prepare('SELECT count(*) FROM campaigns').get();
      expect(locksOn(path)).toBeGreaterThan(0);
      for (let i = 0; i < 2; i++) {
        more.push(openDatabase(path, { mustExist: true, readonly: true }));
        expect(locksOn(path), `after connection ${i + 2} opened`).toBeGreaterThan(0);
      }
      more.pop()?.close();
      expect(locksOn(path), 'after one closed').toBeGreaterThan(0);
    } finally {
      for (const db of more) db.close();
      first.close();
    }
  });

  it.skipIf(!linux)('a writer opening an existing mirror while a reader of this process has it open', () => {
    const path = mirror(1);
    const reader = openDatabase(path, { mustExist: true, readonly: true });
    try {
      reader.prepare('SELECT count(*) FROM campaigns').get();
      const writer = openDatabase(path);
      writer.prepare('SELECT count(*) FROM campaigns').get();
      expect(locksOn(path), 'writer open').toBeGreaterThan(0);
      expect(locksOn(`${path}-shm`), 'its -shm').toBeGreaterThan(0);
      writer.close();
      expect(locksOn(path), 'after the writer closed').toBeGreaterThan(0);
      expect(locksOn(`${path}-shm`), 'the reader’s -shm after the writer closed').toBeGreaterThan(0);
    } finally {
      reader.close();
    }
  });

  it.skipIf(!linux)('a run lock asked for twice in one process: the second is refused, the first still held', () => {
    const path = mirror(1);
    const lock = RunLock.acquire(path);
    try {
      expect(locksOn(`${path}.lock`)).toBeGreaterThan(0);
      expect(() => RunLock.acquire(path)).toThrow(LockedError);
      expect(locksOn(`${path}.lock`), 'after the refused second').toBeGreaterThan(0);
    } finally {
      lock.release();
    }
  });

  it.skipIf(!linux)(
    'a mirror, its -shm and its run lock checked (and left in their mode) while a connection of this process holds them',
    () => {
      const path = mirror(1);
      const lock = RunLock.acquire(path);
      const reader = openDatabase(path, { mustExist: true, readonly: true });
      try {
        reader.prepare('SELECT count(*) FROM campaigns').get();
        for (const file of [path, `${path}-shm`, `${path}.lock`]) chmodSync(file, 0o640);
        // The writer's open of an existing mirror looks at the file and its sides by path: the reader keeps its locks.
        openDatabase(path).close();
        for (const file of [path, `${path}-shm`, `${path}.lock`]) {
          expect(statSync(file).mode & 0o777, file).toBe(0o640);
          expect(locksOn(file), `${file} after a writer opened and closed`).toBeGreaterThan(0);
        }
        expect(() => RunLock.acquire(path)).toThrow(LockedError);
      } finally {
        reader.close();
        lock.release();
      }
    },
  );

  it('another process’s close cannot change the snapshot of a reader whose process opened and closed a writer meanwhile', async () => {
    const path = mirror(10);
    // Another process with the mirror open: it adds rows, then closes (an analyst's `sqlite3 m.db`).
    const other = writerProcess(path);
    await other.say('open');
    const first = openDatabase(path, { mustExist: true, readonly: true });
    try {
      // The snapshot starts at the first read, of another table: the campaigns' pages are read
      // from the file only later, inside the same read transaction.
      first.exec('BEGIN');
      first.prepare('SELECT count(*) FROM meta').get();
      const count = () => (first.prepare('SELECT count(*) AS n FROM campaigns').get() as { n: number }).n;
      await other.say('insert 100');
      openDatabase(path).close();
      // Closing, the other process checkpoints the WAL into the file and deletes it only when it is
      // the last one to have the database open: this process's locks on it say it is not.
      await other.say('close');
      expect(count(), 'the same read transaction').toBe(10);
      first.exec('COMMIT');
      expect(count(), 'a new one').toBe(110);
    } finally {
      first.close();
      other.kill();
    }
  });
});

/** A process holding `path` open with better-sqlite3, answering `ok` to each command on its stdin. */
function writerProcess(path: string) {
  const sqlite = createRequire(import.meta.url).resolve(SQLITE_DRIVER);
  const script = `
    const Database = require(${JSON.stringify(sqlite)});
    let db; let n = 1000;
    require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
      const [cmd, arg] = line.split(' ');
      if (cmd === 'open') { db = new Database(${JSON.stringify(path)}); db.prepare('SELECT count(*) FROM campaigns').get(); }
      if (cmd === 'insert') {
        const add = db.prepare("INSERT INTO campaigns (id, name, type, raw) VALUES (?, 'x', 'session', '{}')");
        db.transaction(() => { for (let i = 0; i < Number(arg); i++) add.run('o' + n++); })();
      }
      if (cmd === 'close') db.close();
      process.stdout.write('ok\\n');
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const replies: ((line: string) => void)[] = [];
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buffered += d;
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      replies.shift()?.(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
    }
  });
  return {
    say: (command: string) =>
      new Promise<string>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`the other process exited (${code}) before answering ${command}`)));
        replies.push(resolve);
        child.stdin.write(`${command}\n`);
      }),
    kill: () => child.kill(),
  };
}
