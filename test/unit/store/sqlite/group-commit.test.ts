import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { GroupCommit } from '../../../../src/store/sqlite/group-commit.js';
import { tempDir } from '../../../helpers/index.js';

function setup() {
  const path = join(tempDir(), 'g.db');
  const db = openDatabase(path);
  db.exec('CREATE TABLE t (v INTEGER)');
  // A second connection sees only what is committed.
  const reader = openDatabase(path, { readonly: true, mustExist: true });
  const committed = () => reader.prepare('SELECT count(*) FROM t').pluck().get() as number;
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  return { db, committed, insert };
}

describe('group commit', () => {
  it('commits when the group holds enough records or bytes, and on demand', () => {
    const { db, committed, insert } = setup();
    const group = new GroupCommit(db, { records: 3, bytes: 1000, ms: 60_000 });
    group.write(() => insert.run(1), 1, 10);
    group.write(() => insert.run(2), 1, 10);
    expect(committed()).toBe(0);
    group.write(() => insert.run(3), 1, 10);
    expect(committed()).toBe(3);
    group.write(() => insert.run(4), 0, 2000);
    expect(committed()).toBe(4);
    group.write(() => insert.run(5), 1, 1);
    group.commit();
    expect(committed()).toBe(5);
    expect(db.inTransaction).toBe(false);
  });

  it('commits a quiet group after its time limit', async () => {
    const { db, committed, insert } = setup();
    // Fake timers: the time limit is proved without waiting it out.
    vi.useFakeTimers();
    try {
      const group = new GroupCommit(db, { records: 1000, bytes: 1e9, ms: 50 });
      group.write(() => insert.run(1), 1, 1);
      expect(committed()).toBe(0);
      await vi.advanceTimersByTimeAsync(49);
      expect(committed()).toBe(0);
      await vi.advanceTimersByTimeAsync(71);
      expect(committed()).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a page that fails rolls back the whole group and stops every later write', () => {
    const { db, committed, insert } = setup();
    const group = new GroupCommit(db, { records: 1000, bytes: 1e9, ms: 60_000 });
    group.write(() => insert.run(1), 1, 1);
    expect(() =>
      group.write(
        () => {
          insert.run(2);
          throw new Error('bad page');
        },
        1,
        1,
      ),
    ).toThrow(/cannot write to .*g\.db: bad page/);
    // Nothing of the group is committed or left open: the pages before it went with it, so every
    // stream's checkpoint stays in step with its records.
    expect(db.inTransaction).toBe(false);
    expect(committed()).toBe(0);
    expect(group.failure?.exitCode).toBe(74);
    expect(() => group.write(() => insert.run(3), 1, 1)).toThrow(/bad page/);
    expect(() => group.commit()).toThrow(/bad page/);
    expect(committed()).toBe(0);
  });

  it('a failed timed commit rolls back and is reported by the next call', async () => {
    const { db, committed, insert } = setup();
    // Make COMMIT fail: a deferred foreign key violation is only checked at commit time.
    db.pragma('foreign_keys = ON');
    db.exec('CREATE TABLE parent (id INTEGER PRIMARY KEY)');
    db.exec('CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)');
    vi.useFakeTimers();
    const group = new GroupCommit(db, { records: 1000, bytes: 1e9, ms: 30 });
    group.write(() => insert.run(1), 1, 1);
    group.write(() => db.exec('INSERT INTO child VALUES (42)'), 1, 1);
    try {
      await vi.advanceTimersByTimeAsync(80);
    } finally {
      vi.useRealTimers();
    }
    expect(db.inTransaction).toBe(false);
    expect(committed()).toBe(0);
    expect(() => group.write(() => insert.run(2), 1, 1)).toThrow(/FOREIGN KEY/);
    expect(db.inTransaction).toBe(false);
  });
});
