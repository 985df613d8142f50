/**
 * The request budget against a store of slots it shares: the limit its processes agree on (the
 * stricter of theirs), told once; and a slot lent too long after it was asked for, given back unused.
 */
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../src/api/budget.js';
import { type BudgetStore, type Rate, SEND_WITHIN_MS, type SlotLoan, type SlotTake, stricterRate } from '../../../src/core/rate.js';
import { fakeClock } from '../../helpers/clock.js';

describe('the stricter of two limits', () => {
  it('keeps both: the smaller count in the longer window', () => {
    expect(stricterRate({ count: 20, windowMs: 1000 }, { count: 20, windowMs: 5000 })).toEqual({ count: 20, windowMs: 5000 });
    expect(stricterRate({ count: 100, windowMs: 60_000 }, { count: 60, windowMs: 60_000 })).toEqual({ count: 60, windowMs: 60_000 });
    // Neither is stricter: a budget slower than both (any minute holds at most 10, any second too).
    expect(stricterRate({ count: 100, windowMs: 60_000 }, { count: 10, windowMs: 1000 })).toEqual({ count: 10, windowMs: 60_000 });
  });
});

/** A store that lends slots in order, each answer given by `answer` (a promise the test settles). */
function scriptedStore(answer: () => Promise<SlotTake>): BudgetStore & { ends: Array<[SlotLoan, boolean]>; asked: Rate[] } {
  const ends: Array<[SlotLoan, boolean]> = [];
  const asked: Rate[] = [];
  return {
    immediate: false,
    ends,
    asked,
    take(rate) {
      asked.push(rate);
      return answer();
    },
    end(loan, answered) {
      ends.push([loan, answered]);
    },
    close() {},
  };
}

describe('a budget sharing a store', () => {
  it('a slot lent more than SEND_WITHIN_MS after it was asked for is given back unused, and another is taken', async () => {
    const clock = fakeClock(1_000);
    const mono = { t: 0 };
    const timed = { ...clock, monotonic: () => mono.t };
    let n = 0;
    const store = scriptedStore(async () => {
      n++;
      // The first answer comes after the process was stopped for longer than the grace (SIGSTOP, a suspended VM).
      if (n === 1) mono.t += SEND_WITHIN_MS + 1;
      return { slot: n - 1, owner: n, windowMs: 1002 };
    });
    const budget = new RequestBudget({ count: 5, windowMs: 1000 }, timed, store);
    const release = await budget.acquire();
    expect(store.asked).toHaveLength(2);
    // The late loan went back as answered (free a window from now), never sent on.
    expect(store.ends).toEqual([[{ slot: 0, owner: 1, windowMs: 1002 }, true]]);
    release();
    expect(store.ends.at(-1)).toEqual([{ slot: 1, owner: 2, windowMs: 1002 }, true]);
  });

  it("tells once that the store counts by another process's stricter limit, and keeps to it from then on", async () => {
    const clock = fakeClock(1_000);
    const agreed = { count: 2, windowMs: 5000 };
    let n = 0;
    const store = scriptedStore(async () => ({ slot: n++, owner: n, windowMs: 5010, limit: agreed }));
    const told: Rate[] = [];
    const budget = new RequestBudget({ count: 5, windowMs: 1000 }, clock, store, (limit) => told.push(limit));
    expect(budget.keptRate, 'its own until the store says').toEqual({ count: 5, windowMs: 1000 });
    for (let i = 0; i < 3; i++) (await budget.acquire())();
    expect(store.asked[0]).toEqual({ count: 5, windowMs: 1000 });
    expect(told).toEqual([agreed]);
    // What a watch plans its passes by (sync/schedule.ts passBudget).
    expect(budget.keptRate).toEqual(agreed);
  });

  it('says nothing while the store counts by its own limit', async () => {
    const clock = fakeClock(1_000);
    const own = { count: 5, windowMs: 1000 };
    const store = scriptedStore(async () => ({ slot: 0, owner: 1, windowMs: 1002, limit: own }));
    const told: Rate[] = [];
    (await new RequestBudget(own, clock, store, (limit) => told.push(limit)).acquire())();
    expect(told).toEqual([]);
  });
});
