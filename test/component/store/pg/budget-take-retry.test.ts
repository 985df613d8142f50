import { describe, expect, it } from 'vitest';
import { StorageError } from '../../../../src/errors.js';
import { PgBudgetSlots } from '../../../../src/store/pg/budget-slots.js';
import type { PgDatabase } from '../../../../src/store/pg/database.js';

/** A database whose first queries fail as `failures` says, then answer with a slot. */
function fakeDb(failures: StorageError[]): { db: PgDatabase; calls: () => number } {
  let calls = 0;
  const db = {
    async query() {
      calls++;
      const failure = failures.shift();
      if (failure) throw failure;
      return { rows: [{ taken: 3, wait_ms: null, in_flight: null }], rowCount: 1 };
    },
  } as unknown as PgDatabase;
  return { db, calls: () => calls };
}

const lost = () =>
  new StorageError('cannot take a slot: terminating connection due to idle-session timeout', { code: '57P05', disconnected: true });

describe('a take of the PostgreSQL budget on a connection the server closed while idle', () => {
  it('is asked again once, on a fresh connection', async () => {
    const { db, calls } = fakeDb([lost()]);
    const taken = await new PgBudgetSlots(db, 'k', 30_000).take(5, 1000);
    expect(taken).toMatchObject({ slot: 3 });
    expect(calls()).toBe(2);
  });

  it('fails when the fresh connection is lost too, and on any other fault at once', async () => {
    await expect(new PgBudgetSlots(fakeDb([lost(), lost()]).db, 'k', 30_000).take(5, 1000)).rejects.toThrow(/idle-session/);
    const other = fakeDb([new StorageError('cannot take a slot: permission denied', { code: '42501' })]);
    await expect(new PgBudgetSlots(other.db, 'k', 30_000).take(5, 1000)).rejects.toThrow(/permission denied/);
    expect(other.calls()).toBe(1);
  });
});
