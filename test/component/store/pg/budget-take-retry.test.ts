import { describe, expect, it } from 'vitest';
import { StorageError } from '../../../../src/errors.js';
import { PgBudgetSlots } from '../../../../src/store/pg/budget-slots.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';

/** A database whose first transactions fail to open as `failures` says, then lend slot 3. */
function fakeDb(failures: StorageError[]): { db: PgDatabase; calls: () => number } {
  let calls = 0;
  const client = {
    async query(text: string) {
      if (text.startsWith('WITH own')) return { rows: [{ count: 5, window_ms: 1000 }] };
      if (text.startsWith('WITH t')) return { rows: [{ taken: 3, wait_ms: 1 }] };
      return { rows: [] };
    },
    release() {},
  };
  const db = {
    async opened() {
      calls++;
      const failure = failures.shift();
      if (failure) throw failure;
      return { client, result: {} };
    },
    failure: (err: unknown) => err,
    // The real transaction, over the fake connection.
    transaction: PgDatabase.prototype.transaction,
  } as unknown as PgDatabase;
  return { db, calls: () => calls };
}

const lost = () =>
  new StorageError('cannot take a slot: terminating connection due to idle-session timeout', { code: '57P05', disconnected: true });
const five = { count: 5, windowMs: 1000 };

describe('a take of the PostgreSQL budget on a connection the server closed while idle', () => {
  it('is asked again once, on a fresh connection', async () => {
    const { db, calls } = fakeDb([lost()]);
    const slots = new PgBudgetSlots(db, 'k', 30_000);
    const taken = await slots.take(five);
    await slots.close();
    expect(taken).toMatchObject({ slot: 3 });
    expect(calls()).toBe(2);
  });

  it('fails when the fresh connection is lost too, and on any other fault at once', async () => {
    await expect(new PgBudgetSlots(fakeDb([lost(), lost()]).db, 'k', 30_000).take(five)).rejects.toThrow(/idle-session/);
    const other = fakeDb([new StorageError('cannot take a slot: permission denied', { code: '42501' })]);
    await expect(new PgBudgetSlots(other.db, 'k', 30_000).take(five)).rejects.toThrow(/permission denied/);
    expect(other.calls()).toBe(1);
  });
});
