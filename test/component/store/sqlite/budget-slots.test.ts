/**
 * The request budget across processes: a budget takes one of its key's slots in the user's file for
 * each request, so that earlier processes and those running at the same time stay within the rate
 * together; on a fake clock, and between real processes against a server limited to exactly the budget.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../../src/api/budget.js';
import { budgetKey } from '../../../../src/app/client.js';
import { resolveBaseUrl } from '../../../../src/config/config.js';
import type { Clock } from '../../../../src/core/clock.js';
import { LIMIT_LIFE_MS, SEND_WITHIN_MS } from '../../../../src/core/rate.js';
import { BudgetDamaged, type SlotsOptions, SqliteBudgetSlots } from '../../../../src/store/sqlite/budget-slots.js';
import { Database } from '../../../../src/store/sqlite/driver.js';
import { fakeClock } from '../../../helpers/clock.js';
import { sim, tempDir } from '../../../helpers/index.js';
import { mountReadOnly, mountTmpfs } from '../../../helpers/mounts.js';
import { runCli } from '../../../helpers/run-cli.js';

const rate = { count: 3, windowMs: 1000 };
const one = { count: 1, windowMs: 1000 };
const DAY = 86_400_000;
/** A slot lent but unanswered is held this much longer: its request may be sent that long after the take. */
const S = SEND_WITHIN_MS;

/** The slots in `dir` for a key, on `clock`; requests time out after `timeoutMs` (0: held two windows when left in flight). */
const open = (dir: string, key: string, clock: Clock, more: Partial<SlotsOptions> = {}) =>
  SqliteBudgetSlots.open(dir, key, { timeoutMs: 0, clock, ...more });

/** A budget of `r` on `clock` sharing the slots in `dir` for key `key`. */
const budget = (r: { count: number; windowMs: number }, clock: Clock, dir: string, key = 'k', more: Partial<SlotsOptions> = {}) =>
  new RequestBudget(r, clock, open(dir, key, clock, more));

const all = (n: number, b: RequestBudget) => Array.from({ length: n }, () => b.tryAcquire()).every((r) => r !== undefined);

describe('the budget slots', () => {
  it('a new budget with the same key waits for the slots an earlier one used; another key does not', () => {
    const dir = tempDir();
    const clock = fakeClock(1_000_000);
    const first = open(dir, 'key-a', clock);
    const a = new RequestBudget(rate, clock, first);
    for (let i = 0; i < 3; i++) (a.tryAcquire() as () => void)();
    first.close();
    clock.t += 200;
    const b = budget(rate, clock, dir, 'key-a');
    expect(b.tryAcquire()).toBeUndefined();
    expect(budget(rate, clock, dir, 'key-b').tryAcquire()).toBeDefined();
    // A window (plus its margin) after the earlier requests ended, their slots are free again.
    clock.t += 1000;
    expect(b.tryAcquire()).toBeDefined();
  });

  it('a request left in flight by a killed process holds its slot: the grace to send it, then two windows without --timeout, --timeout and a window with it', () => {
    for (const timeoutMs of [0, 30_000]) {
      const dir = tempDir();
      const clock = fakeClock(5_000_000);
      expect(budget(one, clock, dir, 'k', { timeoutMs }).tryAcquire()).toBeDefined(); // never released: the process died
      clock.t += 1500;
      const next = budget(one, clock, dir);
      expect(next.tryAcquire()).toBeUndefined();
      clock.t = 5_000_000 + S + Math.max(timeoutMs, 1002) + 1002 - 1;
      expect(next.tryAcquire(), `timeout ${timeoutMs}`).toBeUndefined();
      clock.t += 2;
      expect(next.tryAcquire(), `timeout ${timeoutMs}`).toBeDefined();
    }
  });

  it('keys are kept as a digest, in an owner-only file that never grows past N rows a key, and one a limit said', () => {
    const dir = tempDir();
    const key = budgetKey('https://api.example.com/', 'sk_live_secret');
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(key).not.toBe(budgetKey('https://api.example.com/', 'sk_live_other'));
    const clock = fakeClock(2_000_000);
    const b = budget({ count: 5, windowMs: 1000 }, clock, dir, key);
    for (let i = 0; i < 50; i++) {
      (b.tryAcquire() as (() => void) | undefined)?.();
      clock.t += 97;
    }
    const path = join(dir, 'budget-slots.db');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path).toString('latin1')).not.toContain('sk_live_secret');
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM slots WHERE key = ?').pluck().get(key)).toBe(5);
    expect(db.prepare('SELECT key FROM slots WHERE key != ?').pluck().all(key)).toEqual([`${key}#limit/1000`]);
    db.close();
    // A rollback journal, kept between takes, owner-only as the file; no -wal or -shm.
    expect(statSync(`${path}-journal`).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('a file of the release whose rows also kept their window and hold: the rows keep their times, the two columns go', () => {
    const dir = tempDir();
    const clock = fakeClock(40_000_000);
    const old = new Database(join(dir, 'budget-slots.db'));
    old.exec(
      'CREATE TABLE slots (key TEXT NOT NULL, slot INTEGER NOT NULL, busy_until REAL NOT NULL, window_ms REAL NOT NULL, hold_ms REAL NOT NULL, owner INTEGER NOT NULL, PRIMARY KEY (key, slot)) WITHOUT ROWID',
    );
    old.prepare('INSERT INTO slots VALUES (?, 0, ?, 1000, 2000, 0)').run('k', clock.t + 500);
    old.close();
    const b = budget(one, clock, dir);
    expect(b.tryAcquire(), 'the row it found busy').toBeUndefined();
    clock.t += 501;
    expect(b.tryAcquire()).toBeDefined();
    const db = new Database(join(dir, 'budget-slots.db'), { readonly: true });
    expect((db.pragma('table_info(slots)') as Array<{ name: string }>).map((c) => c.name)).toEqual(['key', 'slot', 'busy_until', 'owner']);
    db.close();
  });

  it('every spelling of one base URL is one service to the budget: an empty query or fragment too', () => {
    const key = (text: string) => budgetKey(resolveBaseUrl(text, false).href, 'k');
    const first = key('http://127.0.0.1:8080');
    for (const text of [
      'http://127.0.0.1:8080/',
      'http://127.0.0.1:8080?',
      'http://127.0.0.1:8080/?',
      'http://127.0.0.1:8080#',
      'HTTP://127.0.0.1:8080/v1/?#',
    ]) {
      expect(key(text), text).toBe(first);
    }
    expect(() => resolveBaseUrl('http://127.0.0.1:8080?a=1', false)).toThrow(/must not carry a query or fragment/);
  });
});

describe('windows and clocks', () => {
  it('a request given up on (a timeout, an abort) holds its slot as one of unknown end: two windows after it was sent here, and the grace to send it too in the next process', () => {
    const dir = tempDir();
    const clock = fakeClock(60_000_000);
    const first = budget(one, clock, dir);
    const sent = clock.t;
    const release = first.tryAcquire() as (answered?: boolean) => void;
    // No answer within 300 ms: the client gives up. The server may still count it later.
    clock.t += 300;
    release(false);
    clock.t = sent + 1400;
    expect(first.tryAcquire(), 'a window after the give-up').toBeUndefined();
    const after = budget(one, clock, dir);
    expect(after.tryAcquire(), 'the next process, a window after the give-up').toBeUndefined();
    clock.t = sent + 2100;
    expect(first.tryAcquire(), 'its own slot is free, the row as taken is not').toBeUndefined();
    clock.t = sent + S + 2 * 1002 + 1;
    expect(after.tryAcquire()).toBeDefined();
    expect(first.tryAcquire(), 'the first process, while the next one holds the slot').toBeUndefined();
  });

  it('a request given up on keeps its row as taken, for the next process: a window after its --timeout from its send', () => {
    const dir = tempDir();
    const clock = fakeClock(60_500_000);
    const sent = clock.t;
    const release = budget(one, clock, dir, 'k', { timeoutMs: 30_000 }).tryAcquire() as (answered?: boolean) => void;
    clock.t += 300;
    release(false);
    const after = budget(one, clock, dir, 'k', { timeoutMs: 30_000 });
    clock.t = sent + S + 30_000 + 1002 - 1;
    expect(after.tryAcquire(), 'it may reach the server until its --timeout').toBeUndefined();
    clock.t += 2;
    expect(after.tryAcquire()).toBeDefined();
  });

  it('an answered request (any status) frees its slot a window after its answer', () => {
    const clock = fakeClock(61_000_000);
    const b = new RequestBudget(one, clock);
    const release = b.tryAcquire() as (answered?: boolean) => void;
    clock.t += 300;
    release();
    clock.t += 1100;
    expect(b.tryAcquire()).toBeDefined();
  });

  it('a request of unknown end is held the grace to send it and two windows, for windows over half an hour too', () => {
    for (const ago of [50, 90, 110]) {
      const dir = tempDir();
      const clock = fakeClock(80_000_000);
      const hour = { count: 1, windowMs: 3_600_000 };
      const sent = clock.t;
      expect(budget(hour, clock, dir).tryAcquire()).toBeDefined(); // kill -9 with it in flight
      clock.t = sent + ago * 60_000;
      const next = budget(hour, clock, dir);
      expect(next.tryAcquire(), `${ago} min after`).toBeUndefined();
      clock.t = sent + S + 2 * 3_600_100 + 1;
      expect(next.tryAcquire(), 'two windows after it was sent').toBeDefined();
    }
  });

  it('a 2/2d budget never sends a third request within 2 days, whatever other keys do meanwhile', () => {
    const dir = tempDir();
    const clock = fakeClock(20_000_000);
    const slow = { count: 2, windowMs: 2 * DAY };
    const a = budget(slow, clock, dir);
    for (let i = 0; i < 2; i++) (a.tryAcquire() as () => void)();
    clock.t += 25 * 3_600_000;
    (budget(one, clock, dir, 'other').tryAcquire() as () => void)();
    const b = budget(slow, clock, dir);
    expect(b.tryAcquire()).toBeUndefined();
    clock.t += 23 * 3_600_000 + 200_000;
    expect(b.tryAcquire()).toBeDefined();
  });

  it('rows from the future (written before the clock was set back a day) hold a slot no longer than a request can', () => {
    const dir = tempDir();
    const clock = fakeClock(30_000_000);
    const ahead = fakeClock(clock.t + DAY);
    const w = budget({ count: 2, windowMs: 10_000 }, ahead, dir);
    for (let i = 0; i < 2; i++) (w.tryAcquire() as () => void)();
    // Back at the right time: held as written, every later run waited a day; brought back to now
    // plus the longest a request holds (a window after its --timeout and a window).
    const b = budget({ count: 2, windowMs: 10_000 }, clock, dir);
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(10_000);
    expect(b.waitEstimate()).toBeLessThanOrEqual(S + 2 * 10_020);
    clock.t += S + 2 * 10_020;
    expect(all(2, b)).toBe(true);
  });

  it("a clock set back by an hour during a run: the others' slots are held one hold at most, not the hour", () => {
    const dir = tempDir();
    let wall = 97_000_000;
    const clock = { now: () => wall, sleep: async () => {} };
    const a = budget({ count: 2, windowMs: 1000 }, clock, dir);
    const b = budget({ count: 2, windowMs: 1000 }, clock, dir);
    for (let i = 0; i < 2; i++) (b.tryAcquire() as () => void)();
    expect(a.tryAcquire()).toBeUndefined();
    wall -= 3_600_000;
    expect(a.tryAcquire()).toBeUndefined();
    wall += S + 2004;
    expect(a.tryAcquire()).toBeDefined();
  });

  it('a wall clock set back during a run does not stall the budget: its own slots are timed on a monotonic clock', () => {
    let wall = 50_000_000;
    let mono = 1_000;
    const clock = { now: () => wall, monotonic: () => mono, sleep: async () => {} };
    const b = new RequestBudget({ count: 2, windowMs: 1000 }, clock);
    for (let i = 0; i < 2; i++) (b.tryAcquire() as () => void)();
    expect(b.tryAcquire()).toBeUndefined();
    wall -= 60_000;
    mono += 1100;
    expect(b.tryAcquire()).toBeDefined();
    expect(b.waitEstimate()).toBe(0);
  });
});

describe('processes running at the same time with one key share the budget', () => {
  it('the slots one takes are not there for the other, and come back to both a window after they ended', () => {
    const dir = tempDir();
    const clock = fakeClock(70_000_000);
    const five = { count: 5, windowMs: 1000 };
    const a = budget(five, clock, dir);
    const b = budget(five, clock, dir);
    const heldByA = [1, 2, 3].map(() => a.tryAcquire() as () => void);
    expect(heldByA.every((r) => r !== undefined)).toBe(true);
    const heldByB = [1, 2].map(() => b.tryAcquire() as () => void);
    expect(heldByB.every((r) => r !== undefined)).toBe(true);
    expect(b.tryAcquire(), "B, with A's three in flight").toBeUndefined();
    expect(a.tryAcquire(), "A, with B's two in flight").toBeUndefined();
    clock.t += 20;
    for (const release of [...heldByA, ...heldByB]) release();
    // Ended 20 ms after they were sent: a window (and its margin) after that, not two after the send.
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(900);
    expect(b.waitEstimate()).toBeLessThanOrEqual(1002);
    clock.t += 1003;
    expect(all(5, b)).toBe(true);
    expect(a.tryAcquire(), 'B took all five').toBeUndefined();
  });

  it("a budget held back by another process's request in flight looks again a window on (the soonest it can be free), and sends a window after that request's answer", () => {
    const dir = tempDir();
    const clock = fakeClock(71_000_000);
    const a = budget(one, clock, dir);
    const b = budget(one, clock, dir);
    const sent = clock.t;
    const release = a.tryAcquire() as () => void;
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeLessThanOrEqual(1002);
    void b.acquire();
    expect(clock.sleeps).toEqual([1002]);
    clock.t = sent + 300;
    release();
    clock.t = sent + 300 + 900;
    expect(b.tryAcquire(), 'within a window of the answer').toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(50);
    expect(b.waitEstimate()).toBeLessThanOrEqual(103);
    clock.t = sent + 300 + 1003;
    expect(b.tryAcquire()).toBeDefined();
  });

  it('a request a killed process left in flight stops being waited for once its hold is over', () => {
    const dir = tempDir();
    const clock = fakeClock(73_000_000);
    const sent = clock.t;
    expect(budget(one, clock, dir).tryAcquire()).toBeDefined(); // never answered: kill -9
    clock.t += 100;
    const b = budget(one, clock, dir);
    expect(b.tryAcquire()).toBeUndefined();
    void b.acquire();
    expect(clock.sleeps, 'its answer may come any moment: free a window after it').toEqual([1002]);
    clock.t = sent + S + 2 * 1002 + 10;
    (b.tryAcquire() as () => void)();
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(1000);
  });

  it("another process's slow answer holds its slot for as long as that process may wait for it (its --timeout), not two windows", () => {
    const dir = tempDir();
    const clock = fakeClock(90_000_000);
    const a = budget(one, clock, dir, 'k', { timeoutMs: 30_000 });
    const b = budget(one, clock, dir, 'k', { timeoutMs: 30_000 });
    const sent = clock.t;
    const release = a.tryAcquire() as () => void;
    clock.t = sent + 3000;
    expect(b.tryAcquire()).toBeUndefined();
    release();
    clock.t = sent + 3000 + 900;
    expect(b.tryAcquire(), 'a window after the answer').toBeUndefined();
    clock.t = sent + 3000 + 1003;
    expect(b.tryAcquire()).toBeDefined();
  });

  it("a request another process took a moment after this one's clock read holds its slot for its whole hold", () => {
    const dir = tempDir();
    const clock = fakeClock(94_000_000);
    const ahead = fakeClock(clock.t + 5);
    const a = budget(one, clock, dir);
    const b = budget(one, ahead, dir);
    (b.tryAcquire() as () => void)();
    expect(a.tryAcquire()).toBeUndefined();
    clock.t += 1004;
    expect(a.tryAcquire(), "within a window (and its margin) of B's answer").toBeUndefined();
    clock.t += 4;
    expect(a.tryAcquire()).toBeDefined();
  });

  it('with different counts on one key, every process keeps to the smaller once its process said it: its busy slots count, whichever', () => {
    const dir = tempDir();
    const clock = fakeClock(99_000_000);
    const told: Array<{ count: number; windowMs: number }> = [];
    const full = new RequestBudget({ count: 5, windowMs: 1000 }, clock, open(dir, 'k', clock), (agreed) => told.push(agreed));
    const gentle = budget({ count: 2, windowMs: 1000 }, clock, dir);
    const five = Array.from({ length: 5 }, () => full.tryAcquire());
    expect(
      five.every((r) => r !== undefined),
      'alone, its own five',
    ).toBe(true);
    for (const release of five) release?.();
    expect(gentle.tryAcquire(), 'five busy: past the two').toBeUndefined();
    clock.t += 1003;
    expect(all(2, full), 'two, the stricter count, and no more').toBe(true);
    expect(full.tryAcquire()).toBeUndefined();
    expect(gentle.tryAcquire()).toBeUndefined();
    expect(told, 'said once').toEqual([{ count: 2, windowMs: 1000 }]);
  });

  it('with different windows on one key, every process keeps to the longer: a 1 s budget waits out the 5 s one', () => {
    const dir = tempDir();
    const clock = fakeClock(99_500_000);
    const fast = budget({ count: 2, windowMs: 1000 }, clock, dir);
    const slow = budget({ count: 2, windowMs: 5000 }, clock, dir);
    expect(slow.tryAcquire(), 'the slow one says its limit').toBeDefined();
    const release = fast.tryAcquire() as () => void;
    release();
    clock.t += 1003;
    expect(fast.tryAcquire(), 'a 1 s window after its answer: still within the 5 s one').toBeUndefined();
    clock.t += 4020;
    expect(fast.tryAcquire()).toBeDefined();
  });

  it("a process's limit binds the others while it lives, then lapses: a stricter one gone stops slowing them", () => {
    const dir = tempDir();
    const clock = fakeClock(99_800_000);
    const strict = budget({ count: 1, windowMs: 1000 }, clock, dir);
    (strict.tryAcquire() as () => void)();
    const loose = budget({ count: 3, windowMs: 1000 }, clock, dir);
    clock.t += 1100;
    expect(all(1, loose)).toBe(true);
    expect(loose.tryAcquire(), 'the strict one said 1 less than a minute ago').toBeUndefined();
    clock.t += LIMIT_LIFE_MS;
    expect(all(2, loose), 'its limit lapsed: three again').toBe(true);
  });

  it('a process that opens no slots (its state folder unwritable) is not seen: the budget is its own, as the warning says', () => {
    const dir = tempDir();
    const clock = fakeClock(72_000_000);
    expect(new RequestBudget(one, clock).tryAcquire()).toBeDefined();
    expect(budget(one, clock, dir).tryAcquire()).toBeDefined();
  });

  it('a file another program holds locked is waited for, never sent past, with one warning after 10 s', () => {
    const dir = tempDir();
    const clock = fakeClock(92_000_000);
    const warnings: string[] = [];
    const b = budget({ count: 5, windowMs: 1000 }, clock, dir, 'k', { warn: (w) => warnings.push(w) });
    const holder = new Database(join(dir, 'budget-slots.db'));
    holder.exec('BEGIN IMMEDIATE');
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBe(25);
    clock.t += 5000;
    expect(b.tryAcquire()).toBeUndefined();
    expect(warnings).toEqual([]);
    clock.t += 5001;
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.tryAcquire()).toBeUndefined();
    expect(warnings).toEqual([
      `the request budget waits: ${join(dir, 'budget-slots.db')} has been locked by another program for 10 s (an sqlite3 shell left in a transaction?); nothing is sent until it is released`,
    ]);
    holder.exec('COMMIT');
    holder.close();
    expect(b.tryAcquire()).toBeDefined();
  });
});

describe('a damaged file: nothing is sent until it is removed', () => {
  it('garbage, or damage only a read finds: the open fails naming the file and what to do, and leaves it as it is', () => {
    const dir = tempDir();
    const path = join(dir, 'budget-slots.db');
    const garbage = Buffer.alloc(5000, 0x5a);
    writeFileSync(path, garbage);
    expect(() => open(dir, 'k', fakeClock(1))).toThrow(BudgetDamaged);
    expect(() => open(dir, 'k', fakeClock(1))).toThrow(
      `the request budget's file ${path} is damaged (SQLITE_NOTADB); it holds only the budget's slots: remove it once no other campaign-sync run with this key is running, and run again`,
    );
    expect(readFileSync(path)).toEqual(garbage);
    // A page of the table overwritten: found by the check at open.
    const other = tempDir();
    const clock = fakeClock(1_000);
    const b = budget({ count: 300, windowMs: 1000 }, clock, other);
    for (let i = 0; i < 300; i++) b.tryAcquire();
    const db = new Database(join(other, 'budget-slots.db'));
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const root = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'slots'").pluck().get() as number;
    // The table spans pages: its root is an interior page, not the whole table.
    expect(db.prepare("SELECT count(*) FROM dbstat WHERE name = 'slots'").pluck().get()).toBeGreaterThan(1);
    db.close();
    const fd = openSync(join(other, 'budget-slots.db'), 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (root - 1) * pageSize);
    closeSync(fd);
    expect(() => open(other, 'k', clock)).toThrow(/is damaged \(SQLITE_CORRUPT[A-Z_]*\)/);
  });

  it('the command stops (exit 74) with that one line, and runs once the file is removed', async () => {
    const s = await sim({ campaigns: 1, records: 3 });
    const state = tempDir();
    mkdirSync(join(state, 'campaign-sync'));
    const path = join(state, 'campaign-sync', 'budget-slots.db');
    writeFileSync(path, Buffer.alloc(5000, 0x5a));
    const run = () =>
      runCli(['campaigns', '--base-url', s.url, '--db', join(tempDir(), 'm.db')], {
        env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state },
      });
    const r = await run();
    expect(r.code, r.stderr).toBe(74);
    expect(r.stderr).toContain(`the request budget's file ${path} is damaged (SQLITE_NOTADB)`);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(s.stats.requests).toBe(0);
    rmSync(path);
    expect((await run()).code).toBe(0);
  });
});

describe("what is at the slots' path is left as it was when it is not a file of the budget's own", () => {
  it("a hard link, a named pipe, another program's database: one warning each, the sync goes on; a symbolic link: exit 2 naming it; nothing changed or waited on", async () => {
    const s = await sim({ campaigns: 1, records: 3 });
    const victim = join(tempDir(), 'notes.txt');
    writeFileSync(victim, 'my notes\n', { mode: 0o644 });
    chmodSync(victim, 0o644);
    const foreign = join(tempDir(), 'other.db');
    const f = new Database(foreign);
    f.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, t TEXT)');
    f.close();
    chmodSync(foreign, 0o644);
    const foreignBytes = readFileSync(foreign);
    const cases: Array<[string, (path: string) => void, RegExp]> = [
      ['symlink', (p) => symlinkSync(victim, p), /is a symbolic link/],
      ['hard link', (p) => linkSync(victim, p), /has 2 names \(hard links\)/],
      ['named pipe', (p) => execFileSync('mkfifo', [p]), /is not a file \(a folder, a named pipe or a device\)/],
      ['foreign database', (p) => copyFileSync(foreign, p), /holds tables that are not the budget's \(notes\)/],
      ['symlinked -journal', (p) => symlinkSync(victim, `${p}-journal`), /budget-slots\.db-journal is a symbolic link/],
    ];
    for (const [name, make, said] of cases) {
      const state = tempDir();
      mkdirSync(join(state, 'campaign-sync'));
      const path = join(state, 'campaign-sync', 'budget-slots.db');
      make(path);
      const before = name === 'foreign database' ? readFileSync(path) : undefined;
      const r = await runCli(['campaigns', '--base-url', s.url, '--db', join(tempDir(), 'm.db')], {
        env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state },
        timeoutMs: 20_000,
      });
      if (name.startsWith('symlink')) {
        // Never written through: refused before any request, as every file of ours is.
        expect(r.code, `${name}: ${r.stderr}`).toBe(2);
        expect(r.stderr, name).toMatch(/^campaign-sync: \S+ is a symbolic link; campaign-sync does not follow links to its own files/);
        expect(r.stderr, name).toMatch(said);
        expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
        continue;
      }
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stderr, name).toMatch(/^warning: the request budget is not shared with other runs: /);
      expect(r.stderr, name).toMatch(said);
      expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
      if (before !== undefined) {
        expect(readFileSync(path), name).toEqual(before);
        // Its mode too: it was made 0600 before its tables were looked at.
        expect(statSync(path).mode & 0o777, name).toBe(0o644);
      }
    }
    // The link's target kept its mode and bytes; the other program's database too.
    expect(statSync(victim).mode & 0o777).toBe(0o644);
    expect(readFileSync(victim, 'utf8')).toBe('my notes\n');
    expect(readFileSync(foreign)).toEqual(foreignBytes);
  });
});

describe('the file cannot be written', () => {
  it('a slots file that cannot be opened for writing is named, not its folder; a folder that cannot be written is', async (ctx) => {
    const s = await sim({ campaigns: 1, records: 3 });
    const state = tempDir();
    const run = () =>
      runCli(['campaigns', '--base-url', s.url, '--db', join(tempDir(), 'm.db')], {
        env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state },
      });
    expect((await run()).stderr).toBe('');
    const folder = join(state, 'campaign-sync');
    const undo = mountReadOnly(folder);
    if (!undo) return ctx.skip();
    try {
      const r = await run();
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(
        `warning: the request budget is not shared with other runs: ${join(folder, 'budget-slots.db')} could not be opened for writing (EROFS)\n`,
      );
    } finally {
      undo();
    }
    const empty = tempDir();
    mkdirSync(join(empty, 'campaign-sync'));
    const undoEmpty = mountReadOnly(join(empty, 'campaign-sync'));
    try {
      const r = await runCli(['campaigns', '--base-url', s.url, '--db', join(tempDir(), 'm.db')], {
        env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: empty },
      });
      expect(r.stderr).toBe(
        `warning: the request budget is not shared with other runs: cannot write ${join(empty, 'campaign-sync')} (EROFS)\n`,
      );
    } finally {
      undoEmpty?.();
    }
  });

  it('a disk that fills during a run: one warning naming the file, and the requests go on', async (ctx) => {
    const dir = tempDir();
    const undo = mountTmpfs(dir, 256);
    if (!undo) return ctx.skip();
    try {
      const warnings: string[] = [];
      const store = SqliteBudgetSlots.open(dir, 'k', { timeoutMs: 0, warn: (w) => warnings.push(w) });
      const budget = new RequestBudget({ count: 1_000_000, windowMs: 1000 }, undefined, store);
      // Full to the last block after the slots opened.
      try {
        writeFileSync(join(dir, 'filler'), Buffer.alloc(1024 * 1024));
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      for (let i = 0; i < 2000; i++) {
        const release = budget.tryAcquire();
        expect(release, `request ${i}`).toBeDefined();
        release?.();
      }
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^the request budget is no longer shared with other runs: ${dir}/budget-slots\\.db could not be written \\(SQLITE_FULL\\)`,
          ),
        ),
      ]);
      store.close();
    } finally {
      undo();
    }
  });
});

describe('processes with one key against a server limited to exactly the budget', () => {
  it('eight pulls started together on eight databases, one campaign each: zero 429', async () => {
    const s = await sim({ campaigns: 8, records: 10, rateLimit: { count: 6, windowMs: 2000 }, faults: { slow: 1 }, slowMs: 200 });
    const state = tempDir();
    const runs = await Promise.all(
      s.data.campaigns.map((c) =>
        runCli(
          [
            'pull',
            '--db',
            join(tempDir(), 'm.db'),
            '--campaign',
            c.id,
            '--page-size',
            '10',
            '--rate-limit',
            '6/2s',
            '--max-retries',
            '0',
            '--json',
          ],
          { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state }, timeoutMs: 120_000 },
        ),
      ),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    expect(s.stats.byStatus[429] ?? 0).toBe(0);
  });

  it('two pulls started together on two databases stay within the server limit together: zero 429 (each on its own state folder: 429s)', async () => {
    // Each pull makes 5 requests (the list, 2 pages per stream) at 6 a window; the server allows 6 a
    // window and answers each after 300 ms, so that the two runs overlap whichever starts first.
    const run = async (states: [string, string], windowS: number) => {
      const limit = { count: 6, windowMs: windowS * 1000 };
      const s = await sim({ campaigns: 2, records: 10, rateLimit: limit, faults: { slow: 1 }, slowMs: 300 });
      const args = (db: string) => [
        'pull',
        '--db',
        db,
        '--page-size',
        '5',
        '--rate-limit',
        `6/${windowS}s`,
        '--max-retries',
        '0',
        '--json',
      ];
      const env = (state: string) => ({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state });
      const [first, second] = await Promise.all([
        runCli(args(join(tempDir(), 'a.db')), { env: env(states[0]) }),
        runCli(args(join(tempDir(), 'b.db')), { env: env(states[1]) }),
      ]);
      return { first, second, tooMany: s.stats.byStatus[429] ?? 0, served: s.stats.requests };
    };
    const state = tempDir();
    const shared = await run([state, state], 4);
    expect(shared.first.code, shared.first.stderr).toBe(0);
    expect(shared.second.code, shared.second.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    expect(shared.served).toBe(10);
    // The control: each process on its own budget sends its 5 at once, into one window; a minute's,
    // so that they fall in one however slowly a loaded machine starts them.
    const split = await run([tempDir(), tempDir()], 60);
    expect(split.tooMany).toBeGreaterThan(0);
  });

  it('stay within the server limit together: zero 429 (and without the shared slots, 429s)', async () => {
    // Each pull makes 5 requests (the list, 2 pages per stream); the server allows 6 a window.
    const run = async (state: string, secondState: string, db: string, windowS: number) => {
      const s = await sim({ campaigns: 2, records: 10, rateLimit: { count: 6, windowMs: windowS * 1000 } });
      const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state };
      const args = ['pull', '--db', db, '--page-size', '5', '--rate-limit', `6/${windowS}s`, '--max-retries', '0', '--json'];
      const first = await runCli(args, { env });
      const second = await runCli([...args, '--full'], { env: { ...env, XDG_STATE_HOME: secondState } });
      return { first, second, tooMany: s.stats.byStatus[429] ?? 0 };
    };
    const state = tempDir();
    const shared = await run(state, state, join(tempDir(), 'a.db'), 4);
    expect(shared.first.code, shared.first.stderr).toBe(0);
    expect(shared.second.code, shared.second.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    // The control: each process on its own budget, 10 requests into one window (a minute's: one however slow the machine).
    const split = await run(tempDir(), tempDir(), join(tempDir(), 'b.db'), 60);
    expect(split.tooMany).toBeGreaterThan(0);
  });
});
