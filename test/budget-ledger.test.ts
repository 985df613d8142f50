/**
 * The request budget across processes (issue 15): a budget starts from the requests earlier
 * processes with the same key made within the window, on a fake clock and between two real
 * processes against a server limited to exactly the budget.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../src/api/budget.js';
import { BudgetLedger, ledgerFingerprint } from '../src/store/budget-ledger.js';
import { fakeClock } from './helpers/clock.js';
import { cli, sim, tempDir } from './helpers/index.js';

const rate = { count: 3, windowMs: 1000 };

describe('the budget ledger', () => {
  it('a new budget with the same key waits for the slots an earlier one used; another key does not', () => {
    const dir = tempDir();
    const clock = fakeClock(1_000_000);
    const first = BudgetLedger.open(dir, 'key-a', clock.t);
    const a = new RequestBudget(rate, clock, first);
    for (let i = 0; i < 3; i++) (a.tryAcquire() as () => void)();
    first.close();

    clock.t += 200;
    const again = BudgetLedger.open(dir, 'key-a', clock.t);
    const b = new RequestBudget(rate, clock, again);
    expect(b.tryAcquire()).toBeUndefined();
    const other = BudgetLedger.open(dir, 'key-b', clock.t);
    expect(new RequestBudget(rate, clock, other).tryAcquire()).toBeDefined();
    // A window (plus its margin) after the earlier requests ended, their slots are free again.
    clock.t += 1000;
    expect(b.tryAcquire()).toBeDefined();
    again.close();
    other.close();
  });

  it('a request left in flight by a killed process holds its slot for a window', () => {
    const dir = tempDir();
    const clock = fakeClock(5_000_000);
    const ledger = BudgetLedger.open(dir, 'k', clock.t);
    const killed = new RequestBudget({ count: 1, windowMs: 1000 }, clock, ledger);
    expect(killed.tryAcquire()).toBeDefined(); // never released: the process died
    ledger.close();
    clock.t += 1500;
    const next = BudgetLedger.open(dir, 'k', clock.t);
    const budget = new RequestBudget({ count: 1, windowMs: 1000 }, clock, next);
    expect(budget.tryAcquire()).toBeUndefined();
    clock.t += 1100;
    expect(budget.tryAcquire()).toBeDefined();
    next.close();
  });

  it('keys are kept as a fingerprint, in an owner-only file', () => {
    const dir = tempDir();
    const fp = ledgerFingerprint('https://api.example.com/', 'sk_live_secret');
    expect(fp).toMatch(/^[0-9a-f]{32}$/);
    expect(fp).not.toBe(ledgerFingerprint('https://api.example.com/', 'sk_live_other'));
    const ledger = BudgetLedger.open(dir, fp);
    ledger.end(ledger.begin(Date.now()), Date.now());
    ledger.close();
    expect(statSync(join(dir, 'budget.db')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'budget.db')).toString('latin1')).not.toContain('sk_live_secret');
  });
});

describe('back-to-back processes with one key', () => {
  it('stay within the server limit together: zero 429 (and without the shared ledger, 429s)', async () => {
    // Each pull makes 5 requests (the list, 2 pages per stream); the server allows 6 per 8 s (a window
    // long enough that two slow processes on a loaded machine still fall in one).
    const run = async (state: string, secondState: string, db: string) => {
      const s = await sim({ campaigns: 2, records: 10, rateLimit: { count: 6, windowMs: 8000 } });
      const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state };
      const args = ['pull', '--db', db, '--page-size', '5', '--rate-limit', '6/8s', '--max-retries', '0', '--json'];
      const first = await cli(args, { env });
      const second = await cli([...args, '--full'], { env: { ...env, XDG_STATE_HOME: secondState } });
      return { first, second, tooMany: s.stats.byStatus[429] ?? 0 };
    };
    const state = tempDir();
    const shared = await run(state, state, join(tempDir(), 'a.db'));
    expect(shared.first.code, shared.first.stderr).toBe(0);
    expect(shared.second.code, shared.second.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    // The control: each process on its own budget sends 10 requests into one window.
    const split = await run(tempDir(), tempDir(), join(tempDir(), 'b.db'));
    expect(split.tooMany).toBeGreaterThan(0);
  });
});
