/**
 * The request budget across processes (issue 15): a budget counts the requests other processes with
 * the same key made within the window, earlier ones and those running at the same time, on a fake
 * clock and between real processes against a server limited to exactly the budget.
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
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../src/api/budget.js';
import { resolveBaseUrl } from '../src/config/config.js';
import { BudgetLedger, LEDGER_QUERIES, ledgerFingerprint } from '../src/store/budget-ledger.js';
import { Database } from '../src/store/sqlite.js';
import { fakeClock } from './helpers/clock.js';
import { cli, sim, tempDir } from './helpers/index.js';
import { mountReadOnly, mountTmpfs } from './helpers/mounts.js';

const rate = { count: 3, windowMs: 1000 };

/** The ledger in `dir` for a key, opened at `t` by a budget of `windowMs`. */
const open = (dir: string, fingerprint: string, t: number, windowMs = 1000) => BudgetLedger.open(dir, fingerprint, windowMs, t).ledger;

/** Records a request sent at `t` in `ledger`, whatever the others hold; returns its id. */
const record = (ledger: BudgetLedger, t: number) => ledger.reserve(t, 1000, () => true) as number;

/** The rows of the ledger in `dir` (of one key), read by another connection. */
function rows(dir: string, fingerprint?: string): number {
  const db = new Database(join(dir, 'budget.db'), { readonly: true });
  try {
    const sql = `SELECT count(*) FROM requests${fingerprint === undefined ? '' : ' WHERE fingerprint = ?'}`;
    return db
      .prepare(sql)
      .pluck()
      .get(...(fingerprint === undefined ? [] : [fingerprint])) as number;
  } finally {
    db.close();
  }
}

describe('the budget ledger', () => {
  it('a new budget with the same key waits for the slots an earlier one used; another key does not', () => {
    const dir = tempDir();
    const clock = fakeClock(1_000_000);
    const first = open(dir, 'key-a', clock.t);
    const a = new RequestBudget(rate, clock, first);
    for (let i = 0; i < 3; i++) (a.tryAcquire() as () => void)();
    first.close();

    clock.t += 200;
    const again = open(dir, 'key-a', clock.t);
    const b = new RequestBudget(rate, clock, again);
    expect(b.tryAcquire()).toBeUndefined();
    const other = open(dir, 'key-b', clock.t);
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
    const ledger = open(dir, 'k', clock.t);
    const killed = new RequestBudget({ count: 1, windowMs: 1000 }, clock, ledger);
    expect(killed.tryAcquire()).toBeDefined(); // never released: the process died
    ledger.close();
    clock.t += 1500;
    const next = open(dir, 'k', clock.t);
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
    const ledger = open(dir, fp, Date.now());
    const t = Date.now();
    ledger.end(record(ledger, t), t, t, true);
    ledger.close();
    expect(statSync(join(dir, 'budget.db')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'budget.db')).toString('latin1')).not.toContain('sk_live_secret');
  });
});

const DAY = 86_400_000;

describe('the ledger where hostile pass 4 broke it', () => {
  it("an earlier process's request in flight with a longer window holds one slot, for that window up to an hour, not 30 days", () => {
    const dir = tempDir();
    const clock = fakeClock(10_000_000);
    // A pull at 100/30d killed (kill -9) with one request in flight.
    const killed = open(dir, 'k', clock.t, 30 * DAY);
    const sent = clock.t;
    expect(new RequestBudget({ count: 100, windowMs: 30 * DAY }, clock, killed).tryAcquire()).toBeDefined();
    killed.close();
    clock.t += 1500;
    const ledger = open(dir, 'k', clock.t, 6000);
    const budget = new RequestBudget({ count: 5, windowMs: 6000 }, clock, ledger);
    const held = [1, 2, 3, 4].map(() => budget.tryAcquire());
    expect(held.every((r) => r !== undefined)).toBe(true);
    expect(budget.tryAcquire()).toBeUndefined();
    for (const release of held) release?.();
    // A window later its own four slots are free again: they waited behind the killed request's
    // 30-day end (the next pull announced a 30-day wait after 4 requests).
    clock.t += 6100;
    expect([1, 2, 3, 4].map(() => budget.tryAcquire()).every((r) => r !== undefined)).toBe(true);
    // The killed request's slot: held by the longer of the two windows, up to an hour (so a window
    // after an end a window after the send: two hours), not 30 days.
    expect(budget.tryAcquire()).toBeUndefined();
    clock.t = sent + 2 * 3_600_000 - 1000;
    expect(budget.tryAcquire()).toBeUndefined();
    clock.t = sent + 2 * 3_600_000 + 1;
    expect(budget.tryAcquire()).toBeDefined();
    ledger.close();
  });

  it('rows are kept for their own window, whoever prunes: a 2/2d budget never sends a third request within 2 days', () => {
    const dir = tempDir();
    const clock = fakeClock(20_000_000);
    const slow = { count: 2, windowMs: 2 * DAY };
    const first = open(dir, 'k', clock.t, slow.windowMs);
    const a = new RequestBudget(slow, clock, first);
    for (let i = 0; i < 2; i++) (a.tryAcquire() as () => void)();
    first.close();
    // 25 hours on, another key's short-window run opens the ledger (it pruned every row over a day old).
    clock.t += 25 * 3_600_000;
    open(dir, 'other', clock.t, 1000).close();
    const again = open(dir, 'k', clock.t, slow.windowMs);
    const b = new RequestBudget(slow, clock, again);
    expect(b.tryAcquire()).toBeUndefined();
    clock.t += 23 * 3_600_000 + 200_000;
    expect(b.tryAcquire()).toBeDefined();
    again.close();
  });

  it('times in the future (a clock that ran a year ahead, or was set back) are pruned, and never hold a slot past one window', () => {
    const dir = tempDir();
    const clock = fakeClock(30_000_000);
    const ahead = fakeClock(clock.t + 365 * DAY);
    const wrong = open(dir, 'k', ahead.t, 10_000);
    const w = new RequestBudget({ count: 2, windowMs: 10_000 }, ahead, wrong);
    for (let i = 0; i < 2; i++) (w.tryAcquire() as () => void)();
    wrong.close();
    // Back at the right time: those rows cannot be, and are dropped (every later run waited a year),
    // but for the one numbered last, which no one reads.
    const ledger = open(dir, 'k', clock.t, 10_000);
    expect(rows(dir, 'k')).toBe(1);
    const budget = new RequestBudget({ count: 2, windowMs: 10_000 }, clock, ledger);
    expect([budget.tryAcquire(), budget.tryAcquire()].every((r) => r !== undefined)).toBe(true);
    ledger.close();
    // One ahead by less than two windows is not pruned: it holds its slot as written, three windows from now at most.
    const other = new Database(join(dir, 'budget.db'));
    other.prepare("INSERT INTO requests (fingerprint, ended_at, window_ms) VALUES ('j', ?, 10000)").run(clock.t + 19_000);
    other.close();
    const near = open(dir, 'j', clock.t, 10_000);
    const held = new RequestBudget({ count: 1, windowMs: 10_000 }, clock, near);
    expect(held.tryAcquire()).toBeUndefined();
    expect(held.waitEstimate()).toBeGreaterThan(10_000);
    expect(held.waitEstimate()).toBeLessThanOrEqual(3 * 10_020);
    near.close();
  });

  it("another program's lock on the ledger costs skipped rows, not seconds of a frozen process", () => {
    const dir = tempDir();
    const ledger = open(dir, 'k', Date.now());
    const other = new Database(join(dir, 'budget.db'));
    other.exec("BEGIN IMMEDIATE; INSERT INTO requests (fingerprint, ended_at) VALUES ('x', 0)");
    const t0 = performance.now();
    // Forty requests' writes: with a 2 s wait at each, 80 s of a frozen event loop.
    for (let i = 0; i < 40; i++) {
      const t = Date.now();
      ledger.end(record(ledger, t), t, t, true);
    }
    expect(performance.now() - t0).toBeLessThan(1000);
    other.exec('ROLLBACK');
    other.close();
    ledger.close();
  });

  it('a long-running process prunes rows past their window as it goes, not only when a ledger opens', () => {
    const dir = tempDir();
    const ledger = open(dir, 'k', Date.now());
    const other = new Database(join(dir, 'budget.db'));
    other.prepare("INSERT INTO requests (fingerprint, ended_at, window_ms) VALUES ('old', ?, 1000)").run(Date.now() - 3 * DAY);
    for (let i = 0; i < 1000; i++) {
      const t = Date.now();
      ledger.end(record(ledger, t), t, t, true);
    }
    expect(other.prepare("SELECT count(*) FROM requests WHERE fingerprint = 'old'").pluck().get()).toBe(0);
    other.close();
    ledger.close();
  });

  it('a damaged ledger is moved aside, named in a warning, and a new one started', () => {
    const dir = tempDir();
    const path = join(dir, 'budget.db');
    const garbage = Buffer.alloc(5000, 0x5a);
    writeFileSync(path, garbage);
    // Left by an earlier crash: a file written in the last second may be another process's new ledger.
    utimesSync(path, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const opened = BudgetLedger.open(dir, 'k', 1000, Date.now());
    expect(opened.warnings).toHaveLength(1);
    const aside = /moved aside to (\S+), and a new one started$/.exec(opened.warnings[0] as string)?.[1] as string;
    expect(opened.warnings[0]).toContain(`${path} could not be read (SQLITE_NOTADB)`);
    expect(readFileSync(aside)).toEqual(garbage);
    const t = Date.now();
    opened.ledger.end(record(opened.ledger, t), t, t, true);
    expect(rows(dir)).toBe(1);
    opened.ledger.close();
    // One written in the last second is taken for another process's new ledger: not moved, the open fails once.
    const fresh = tempDir();
    writeFileSync(join(fresh, 'budget.db'), garbage);
    expect(() => BudgetLedger.open(fresh, 'k', 1000, Date.now())).toThrow(/not a database/);
    expect(readFileSync(join(fresh, 'budget.db'))).toEqual(garbage);
  });

  it('processes starting together on a damaged ledger move it aside once, under a lock file; a lock a crash left is taken over', () => {
    const garbage = Buffer.alloc(5000, 0x5a);
    const aged = (path: string) => utimesSync(path, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    // Another process holds the lock (it is moving the file): this one does not move what is there.
    const busy = tempDir();
    writeFileSync(join(busy, 'budget.db'), garbage);
    aged(join(busy, 'budget.db'));
    writeFileSync(join(busy, 'budget.db.moving'), '');
    expect(() => BudgetLedger.open(busy, 'k', 1000, Date.now())).toThrow(/not a database/);
    expect(readFileSync(join(busy, 'budget.db'))).toEqual(garbage);
    // A lock older than 10 s was left by a crash: taken over, the file moved, the lock removed.
    aged(join(busy, 'budget.db.moving'));
    const opened = BudgetLedger.open(busy, 'k', 1000, Date.now());
    expect(opened.warnings).toHaveLength(1);
    opened.ledger.close();
    expect(existsSync(join(busy, 'budget.db.moving'))).toBe(false);
  });
});

describe('the ledger where hostile pass 6 broke the fixes', () => {
  it("another process opening the ledger right after a request was sent keeps that request's row", () => {
    const dir = tempDir();
    const clock = fakeClock(40_000_000);
    const ledger = open(dir, 'k', clock.t, 60_000);
    const budget = new RequestBudget({ count: 1, windowMs: 60_000 }, clock, ledger);
    expect(budget.tryAcquire()).toBeDefined(); // in flight: its provisional end is a window and a margin ahead
    clock.t += 50;
    // Another key's run opens (and prunes) the ledger 50 ms later: the row was taken for "a time that cannot be".
    open(dir, 'other', clock.t, 1000).close();
    expect(rows(dir, 'k')).toBe(1);
    ledger.close();
  });

  it('damage only a read finds (an index page) is found at open: moved aside, never a failed command', () => {
    const dir = tempDir();
    const path = join(dir, 'budget.db');
    const setup = open(dir, 'k', Date.now());
    setup.close();
    const db = new Database(path);
    const insert = db.prepare('INSERT INTO requests (fingerprint, ended_at, window_ms) VALUES (?, ?, 60000)');
    db.transaction(() => {
      for (let i = 0; i < 3000; i++) insert.run(`fp${i}`, Date.now());
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    const root = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'requests_by_hold'").pluck().get() as number;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (root - 1) * pageSize);
    closeSync(fd);
    utimesSync(path, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const opened = BudgetLedger.open(dir, 'k', 60_000, Date.now());
    expect(opened.warnings.join('\n')).toMatch(/could not be read \(SQLITE_CORRUPT[A-Z_]*\): moved aside to .*budget\.db\.damaged-/);
    expect(rows(dir)).toBe(0);
    expect(record(opened.ledger, Date.now())).toBeGreaterThan(0);
    opened.ledger.close();
  });

  it('a wall clock set back during a run does not stall the budget: its slots are timed on a monotonic clock', () => {
    let wall = 50_000_000;
    let mono = 1_000;
    const clock = { now: () => wall, monotonic: () => mono, sleep: async () => {} };
    const budget = new RequestBudget({ count: 2, windowMs: 1000 }, clock);
    for (let i = 0; i < 2; i++) (budget.tryAcquire() as () => void)();
    expect(budget.tryAcquire()).toBeUndefined();
    // NTP steps the wall clock back a minute while a second goes by: the slots are free (a pull waited the minute).
    wall -= 60_000;
    mono += 1100;
    expect(budget.tryAcquire()).toBeDefined();
    expect(budget.waitEstimate()).toBe(0);
  });
});

describe('the ledger where hostile pass 7 broke it', () => {
  it('a request given up on (a timeout, an abort) holds its slot as one of unknown end: two windows after it was sent, here and in the next process', () => {
    const dir = tempDir();
    const clock = fakeClock(60_000_000);
    const one = { count: 1, windowMs: 1000 };
    const ledger = open(dir, 'k', clock.t);
    const budget = new RequestBudget(one, clock, ledger);
    const sent = clock.t;
    const release = budget.tryAcquire() as (answered?: boolean) => void;
    // No answer within 300 ms: the client gives up. The server may still count it later (an
    // overloaded one handles what waited in its queue when it wakes): 4 in 2 s at 3/2s.
    clock.t += 300;
    release(false);
    clock.t = sent + 1400;
    expect(budget.tryAcquire(), 'a window after the give-up').toBeUndefined();
    const next = open(dir, 'k', clock.t);
    const after = new RequestBudget(one, clock, next);
    expect(after.tryAcquire(), 'the next process, a window after the give-up').toBeUndefined();
    clock.t = sent + 2100;
    expect(after.tryAcquire()).toBeDefined();
    // Both run at once and share the one slot: the other process's new request holds it.
    expect(budget.tryAcquire(), 'the first process, while the next one holds the slot').toBeUndefined();
    ledger.close();
    next.close();
  });

  it('an answered request (any status) frees its slot a window after its answer, as before', () => {
    const clock = fakeClock(61_000_000);
    const budget = new RequestBudget({ count: 1, windowMs: 1000 }, clock);
    const release = budget.tryAcquire() as (answered?: boolean) => void;
    clock.t += 300;
    release();
    clock.t += 1100;
    expect(budget.tryAcquire()).toBeDefined();
  });

  it("a request a killed longer-window run left in flight holds a later run's slot by the longer window, from its send, not from each run's start", () => {
    const dir = tempDir();
    const clock = fakeClock(62_000_000);
    const killed = open(dir, 'k', clock.t, 3_600_000);
    const hourly = new RequestBudget({ count: 100, windowMs: 3_600_000 }, clock, killed);
    const sent = clock.t;
    for (let i = 0; i < 4; i++) expect(hourly.tryAcquire()).toBeDefined(); // kill -9 with four in flight
    killed.close();
    const short = { count: 5, windowMs: 3000 };
    // The four hold their slots until a window (an hour) after an end a window after the send, for
    // every later run alike: a 5/3s run (which counted them for its own 3 s only, and could then send
    // into the hour the server may count in) and a 100/1h one.
    for (const at of [1500, 15_000, 3_000_000, 2 * 3_600_000 - 1000]) {
      clock.t = sent + at;
      const later = open(dir, 'k', clock.t, short.windowMs);
      const b = new RequestBudget(short, clock, later);
      const release = b.tryAcquire();
      expect(release, `${at} ms after`).toBeDefined();
      expect(b.tryAcquire(), `${at} ms after`).toBeUndefined();
      release?.();
      later.close();
    }
    clock.t = sent + 2 * 3_600_000 + 3010;
    const after = open(dir, 'k', clock.t, short.windowMs);
    const c = new RequestBudget(short, clock, after);
    expect([1, 2, 3, 4, 5].map(() => c.tryAcquire()).every((r) => r !== undefined)).toBe(true);
    after.close();
  });

  it("a run with a longer window sees an earlier shorter-window run's requests, ended or left in flight", () => {
    for (const killed of [false, true]) {
      const dir = tempDir();
      const clock = fakeClock(63_000_000);
      const first = open(dir, 'k', clock.t, 1000);
      const fast = new RequestBudget({ count: 5, windowMs: 1000 }, clock, first);
      const held = [1, 2, 3, 4, 5].map(() => fast.tryAcquire() as () => void);
      clock.t += 20;
      if (!killed) for (const release of held) release();
      first.close();
      // 1.2 s later a 5/3s run opens the ledger: it pruned the 1 s rows before reading them (8 in 3 s).
      clock.t += 1200;
      const second = open(dir, 'k', clock.t, 3000);
      const slow = new RequestBudget({ count: 5, windowMs: 3000 }, clock, second);
      expect(slow.tryAcquire(), killed ? 'left in flight' : 'ended').toBeUndefined();
      second.close();
    }
  });

  it('the end of a request whose row another process pruned meanwhile is recorded anyway, and never over another row', () => {
    const dir = tempDir();
    const clock = fakeClock(64_000_000);
    const ledger = open(dir, 'k', clock.t, 1000);
    const budget = new RequestBudget({ count: 5, windowMs: 1000 }, clock, ledger);
    const release = budget.tryAcquire() as () => void;
    // Its row goes (a prune by an earlier release's rules, or by hand), and another key's row takes its id.
    const other = new Database(join(dir, 'budget.db'));
    const id = other.prepare("SELECT id FROM requests WHERE fingerprint = 'k'").pluck().get() as number;
    other.prepare('DELETE FROM requests WHERE id = ?').run(id);
    other.prepare("INSERT INTO requests (id, fingerprint, ended_at, window_ms) VALUES (?, 'someone', ?, 1000)").run(id, clock.t);
    clock.t += 5000; // a slow page
    release();
    expect(other.prepare("SELECT ended_at FROM requests WHERE fingerprint = 'someone'").pluck().get()).toBe(clock.t - 5000);
    ledger.close();
    other.close();
    // The next run right after waits for it: 8 in 1 s at 5/1s against a server counting at completion.
    const next = open(dir, 'k', clock.t + 100, 1000);
    const after = new RequestBudget({ count: 1, windowMs: 1000 }, fakeClock(clock.t + 100), next);
    expect(after.tryAcquire()).toBeUndefined();
    next.close();
  });

  it('a ledger that cannot be opened is named, with what is wrong with it, not its folder', async () => {
    const s = await sim({ campaigns: 1, records: 3 });
    const state = tempDir();
    mkdirSync(join(state, 'campaign-sync'));
    // Damaged and written a moment ago (another run's new ledger, maybe): not moved aside this time.
    writeFileSync(join(state, 'campaign-sync', 'budget.db'), Buffer.alloc(5000, 0x5a));
    const r = await cli(['campaigns', '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(
      `warning: the request budget is not shared with other runs: ${join(state, 'campaign-sync', 'budget.db')} could not be read (SQLITE_NOTADB); if it is damaged, the next run moves it aside\n`,
    );
  });
});

describe('the ledger where hostile pass 8 broke it', () => {
  it('a request of unknown end is kept until two windows after it was sent, for windows over half an hour too', () => {
    for (const ago of [50, 90, 110]) {
      const dir = tempDir();
      const clock = fakeClock(80_000_000);
      const hour = { count: 1, windowMs: 3_600_000 };
      const killed = open(dir, 'k', clock.t, hour.windowMs);
      const sent = clock.t;
      expect(new RequestBudget(hour, clock, killed).tryAcquire()).toBeDefined(); // kill -9 with it in flight
      killed.close();
      // The next run opens (and prunes) the ledger `ago` minutes later: at 90 the row was pruned, and it sent at once.
      clock.t = sent + ago * 60_000;
      const next = open(dir, 'k', clock.t, hour.windowMs);
      const budget = new RequestBudget(hour, clock, next);
      expect(budget.tryAcquire(), `${ago} min after`).toBeUndefined();
      clock.t = sent + 2 * 3_600_100 + 1;
      expect(budget.tryAcquire(), 'two windows after it was sent').toBeDefined();
      next.close();
    }
  });

  it('every spelling of one base URL is one service to the ledger: an empty query or fragment too', () => {
    const key = (text: string) => ledgerFingerprint(resolveBaseUrl(text, false).href, 'k');
    const one = key('http://127.0.0.1:8080');
    for (const text of [
      'http://127.0.0.1:8080/',
      'http://127.0.0.1:8080?',
      'http://127.0.0.1:8080/?',
      'http://127.0.0.1:8080#',
      'HTTP://127.0.0.1:8080/v1/?#',
    ]) {
      expect(key(text), text).toBe(one);
    }
    expect(() => resolveBaseUrl('http://127.0.0.1:8080?a=1', false)).toThrow(/must not carry a query or fragment/);
  });

  it('a ledger that cannot be opened for writing is named, not its folder; a folder that cannot be written is', async (ctx) => {
    const s = await sim({ campaigns: 1, records: 3 });
    const state = tempDir();
    const run = () => cli(['campaigns', '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state } });
    expect((await run()).stderr).toBe('');
    const folder = join(state, 'campaign-sync');
    const undo = mountReadOnly(folder);
    if (!undo) return ctx.skip();
    try {
      const r = await run();
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(
        `warning: the request budget is not shared with other runs: ${join(folder, 'budget.db')} could not be opened for writing (EROFS)\n`,
      );
    } finally {
      undo();
    }
    const empty = tempDir();
    mkdirSync(join(empty, 'campaign-sync'));
    const undoEmpty = mountReadOnly(join(empty, 'campaign-sync'));
    try {
      const r = await cli(['campaigns', '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: empty } });
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
      const { ledger } = BudgetLedger.open(dir, 'k', 1000, Date.now(), { warn: (w) => warnings.push(w) });
      const budget = new RequestBudget({ count: 1_000_000, windowMs: 1000 }, undefined, ledger);
      // Full to the last block after the ledger opened.
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
          new RegExp(`^the request budget is no longer shared with other runs: ${dir}/budget\\.db could not be written \\(SQLITE_FULL\\)`),
        ),
      ]);
      ledger.close();
    } finally {
      undo();
    }
  });
});

describe('processes running at the same time with one key share the budget', () => {
  it('the slots one takes are not there for the other, and come back to both a window after they ended', () => {
    const dir = tempDir();
    const clock = fakeClock(70_000_000);
    const five = { count: 5, windowMs: 1000 };
    const a = new RequestBudget(five, clock, open(dir, 'k', clock.t));
    const b = new RequestBudget(five, clock, open(dir, 'k', clock.t));
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
    expect([1, 2, 3, 4, 5].map(() => b.tryAcquire()).every((r) => r !== undefined)).toBe(true);
    expect(a.tryAcquire(), 'B took all five').toBeUndefined();
  });

  it("a budget held back by another process's request in flight looks again soon, and sends a window after that request's answer", () => {
    const dir = tempDir();
    const clock = fakeClock(71_000_000);
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    const b = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    const sent = clock.t;
    const release = a.tryAcquire() as () => void;
    // A's request is in flight: counted as ending a window after it was sent, until its answer comes,
    // which may be any moment: B looks again within 50 ms (its wait is two windows at most).
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeLessThanOrEqual(2 * 1002);
    void b.acquire();
    expect(clock.sleeps).toEqual([50]);
    clock.t = sent + 300;
    release();
    clock.t = sent + 300 + 900;
    expect(b.tryAcquire(), 'within a window of the answer').toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(50);
    // A window after the answer, not two after the send (sent + 2004).
    clock.t = sent + 300 + 1003;
    expect(b.tryAcquire()).toBeDefined();
  });

  it('a request a killed process left in flight stops being looked at once it has left the window', () => {
    const dir = tempDir();
    const clock = fakeClock(73_000_000);
    const one = { count: 1, windowMs: 1000 };
    const killed = open(dir, 'k', clock.t);
    const sent = clock.t;
    expect(new RequestBudget(one, clock, killed).tryAcquire()).toBeDefined(); // never answered: kill -9
    killed.close();
    clock.t += 100;
    const b = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    expect(b.tryAcquire()).toBeUndefined();
    void b.acquire();
    expect(clock.sleeps, 'its answer may come any moment').toEqual([50]);
    // Two windows after it was sent it holds nothing, and B's own request is what B waits for: a
    // window, not a look every 50 ms.
    clock.t = sent + 2 * 1002 + 10;
    (b.tryAcquire() as () => void)();
    expect(b.tryAcquire()).toBeUndefined();
    expect(b.waitEstimate()).toBeGreaterThan(1000);
  });

  it('a process that opens no ledger (its state folder unwritable) is not seen: the budget is its own, as the warning says', () => {
    const dir = tempDir();
    const clock = fakeClock(72_000_000);
    const a = new RequestBudget({ count: 1, windowMs: 1000 }, clock);
    const b = new RequestBudget({ count: 1, windowMs: 1000 }, clock, open(dir, 'k', clock.t));
    expect(a.tryAcquire()).toBeDefined();
    expect(b.tryAcquire()).toBeDefined();
  });

  it('two pulls started together on two databases stay within the server limit together: zero 429 (each on its own state folder: 429s)', async () => {
    // Each pull makes 5 requests (the list, 2 pages per stream) at 6/4s; the server allows 6 per 4 s
    // and answers each after 300 ms, so that the two runs overlap whichever starts first.
    const run = async (states: [string, string]) => {
      const s = await sim({ campaigns: 2, records: 10, rateLimit: { count: 6, windowMs: 4000 }, faults: { slow: 1 }, slowMs: 300 });
      const args = (db: string) => ['pull', '--db', db, '--page-size', '5', '--rate-limit', '6/4s', '--max-retries', '0', '--json'];
      const env = (state: string) => ({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state });
      const [first, second] = await Promise.all([
        cli(args(join(tempDir(), 'a.db')), { env: env(states[0]) }),
        cli(args(join(tempDir(), 'b.db')), { env: env(states[1]) }),
      ]);
      return { first, second, tooMany: s.stats.byStatus[429] ?? 0, served: s.stats.requests };
    };
    const state = tempDir();
    const shared = await run([state, state]);
    expect(shared.first.code, shared.first.stderr).toBe(0);
    expect(shared.second.code, shared.second.stderr).toBe(0);
    expect(shared.tooMany).toBe(0);
    expect(shared.served).toBe(10);
    // The control: each process on its own budget sends its 5 into the same 4 s.
    const split = await run([tempDir(), tempDir()]);
    expect(split.tooMany).toBeGreaterThan(0);
  });
});

describe('the shared budget where hostile pass 9 broke it', () => {
  it("another process's slow answer holds its slot for as long as that process may wait for it (its --timeout), not two windows", () => {
    const dir = tempDir();
    const clock = fakeClock(90_000_000);
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, BudgetLedger.open(dir, 'k', 1000, clock.t, { timeoutMs: 30_000 }).ledger);
    const b = new RequestBudget(one, clock, BudgetLedger.open(dir, 'k', 1000, clock.t, { timeoutMs: 30_000 }).ledger);
    const sent = clock.t;
    const release = a.tryAcquire() as () => void;
    // Three windows later A still waits for its answer: the server may count it when it comes.
    clock.t = sent + 3000;
    expect(b.tryAcquire()).toBeUndefined();
    release();
    clock.t = sent + 3000 + 900;
    expect(b.tryAcquire(), 'a window after the answer').toBeUndefined();
    clock.t = sent + 3000 + 1003;
    expect(b.tryAcquire()).toBeDefined();
  });

  it("processes with different windows on one key hold each other's requests by the longer window: 5/2s and 10/4s stay within 10/4s", () => {
    const dir = tempDir();
    const clock = fakeClock(91_000_000);
    const a = new RequestBudget({ count: 5, windowMs: 2000 }, clock, open(dir, 'k', clock.t, 2000));
    const b = new RequestBudget({ count: 10, windowMs: 4000 }, clock, open(dir, 'k', clock.t, 4000));
    const t0 = clock.t;
    for (const release of Array.from({ length: 10 }, () => b.tryAcquire() as () => void)) release();
    // 2.1 s on, the 5/2s run sent 5 more into the 10/4s server's window.
    clock.t = t0 + 2100;
    expect(a.tryAcquire()).toBeUndefined();
    clock.t = t0 + 4010;
    expect([1, 2, 3, 4, 5].map(() => a.tryAcquire()).every((r) => r !== undefined)).toBe(true);
    // And the other way round: B holds A's five for its own 4 s.
    clock.t = t0 + 4010 + 2100;
    expect([1, 2, 3, 4, 5].map(() => b.tryAcquire()).every((r) => r !== undefined)).toBe(true);
    expect(b.tryAcquire(), "A's five within B's window").toBeUndefined();
  });

  it("a request another process recorded a moment after this one's clock read holds its slot for its whole hold", () => {
    const dir = tempDir();
    const clock = fakeClock(94_000_000);
    const ahead = fakeClock(clock.t + 5); // B's clock read came 5 ms later (A waited for the lock meanwhile)
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    const b = new RequestBudget(one, ahead, open(dir, 'k', clock.t));
    (b.tryAcquire() as () => void)();
    // Read while A's time is behind the row's: taken back to A's time, it stopped holding 5 ms early.
    expect(a.tryAcquire()).toBeUndefined();
    clock.t += 1004;
    expect(a.tryAcquire(), "within a window (and its margin) of B's answer").toBeUndefined();
    clock.t += 4;
    expect(a.tryAcquire()).toBeDefined();
  });

  it("a process that read the others' rows before a prune took them all still sees what they write after it", () => {
    const dir = tempDir();
    const clock = fakeClock(95_000_000);
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    const b = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    (b.tryAcquire() as () => void)();
    expect(a.tryAcquire()).toBeUndefined(); // A has read B's row
    // Three hours on, another process's open prunes every row: B's next one must not take a number A has read past.
    clock.t += 3 * 3_600_000;
    open(dir, 'other', clock.t).close();
    (b.tryAcquire() as () => void)();
    expect(a.tryAcquire(), "B's new request").toBeUndefined();
  });

  it('a ledger another program holds locked is waited for (nothing sent blind), then worked around with one warning', () => {
    const dir = tempDir();
    const clock = fakeClock(92_000_000);
    const warnings: string[] = [];
    const { ledger } = BudgetLedger.open(dir, 'k', 1000, clock.t, { warn: (w) => warnings.push(w) });
    const budget = new RequestBudget({ count: 5, windowMs: 1000 }, clock, ledger);
    const holder = new Database(join(dir, 'budget.db'));
    holder.exec('BEGIN IMMEDIATE');
    // Another process may be sending meanwhile: this one waits, and looks again in 25 ms.
    expect(budget.tryAcquire()).toBeUndefined();
    expect(budget.waitEstimate()).toBe(25);
    clock.t += 5000;
    expect(budget.tryAcquire()).toBeUndefined();
    expect(warnings).toEqual([]);
    holder.exec('COMMIT');
    // Looked at again 25 ms on (one look per 25 ms for the process, whatever its streams).
    expect(budget.tryAcquire()).toBeUndefined();
    clock.t += 25;
    const release = budget.tryAcquire();
    expect(release).toBeDefined();
    // An end that finds the lock held is written with the next request, not lost.
    holder.exec('BEGIN IMMEDIATE');
    clock.t += 10;
    release?.();
    const answered = () => holder.prepare("SELECT count(*) FROM requests WHERE sent_at IS NULL AND fingerprint = 'k'").pluck().get();
    holder.exec('COMMIT');
    expect(answered()).toBe(0);
    expect(budget.tryAcquire()).toBeDefined();
    expect(answered()).toBe(1);
    // Held past 10 s (an sqlite3 shell left in a transaction): the run goes on, and says so once.
    holder.exec('BEGIN IMMEDIATE');
    expect(budget.tryAcquire()).toBeUndefined();
    clock.t += 10_001;
    expect(budget.tryAcquire()).toBeDefined();
    expect(budget.tryAcquire()).toBeDefined();
    expect(warnings).toEqual([
      `the request budget is not shared with other runs for now: ${join(dir, 'budget.db')} has been locked by another program for 10 s (SQLITE_BUSY; an sqlite3 shell left in a transaction?); tried again every 5 s`,
    ]);
    holder.exec('ROLLBACK');
    holder.close();
    ledger.close();
  });

  it('a ledger removed or replaced during a run is opened again at its path, so later processes see this one', () => {
    for (const how of ['removed', 'renamed']) {
      const dir = tempDir();
      const clock = fakeClock(93_000_000);
      const warnings: string[] = [];
      const { ledger } = BudgetLedger.open(dir, 'k', 1000, clock.t, { warn: (w) => warnings.push(w) });
      const one = { count: 1, windowMs: 1000 };
      const budget = new RequestBudget(one, clock, ledger);
      (budget.tryAcquire() as () => void)();
      for (const suffix of ['', '-wal', '-shm']) {
        const path = join(dir, `budget.db${suffix}`);
        if (!existsSync(path)) continue;
        if (how === 'removed') rmSync(path);
        else renameSync(path, `${path}.old`);
      }
      clock.t += 2500;
      (budget.tryAcquire() as () => void)();
      expect(warnings, how).toEqual([
        `the request budget's ledger ${join(dir, 'budget.db')} was removed or replaced during the run: opened again`,
      ]);
      // A process starting now sees that request.
      const later = new RequestBudget(one, clock, open(dir, 'k', clock.t));
      expect(later.tryAcquire(), how).toBeUndefined();
      ledger.close();
    }
  });
});

describe('the shared budget where hostile pass 10 broke it', () => {
  it("reads by index: the others' rows that changed by their numbers, a first read and a prune by time", () => {
    const dir = tempDir();
    open(dir, 'k', Date.now()).close();
    const db = new Database(join(dir, 'budget.db'));
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ now: 1, window: 1, fingerprint: 'k', owner: 1, seq: 0 }) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join('; ');
    // Left to choose, SQLite read every row of the key (an hour of them) at each read.
    expect(plan(LEDGER_QUERIES.OTHERS_SINCE)).toMatch(/^SEARCH requests USING INDEX requests_by_seq \(seq>\?\)$/);
    expect(plan(LEDGER_QUERIES.OTHERS_NOW)).toMatch(/^SEARCH requests USING INDEX requests_by_hold \(fingerprint=\? AND hold_until>\?\)$/);
    expect(plan(LEDGER_QUERIES.PRUNE)).toContain('SEARCH requests USING INDEX requests_by_end (ended_at<?)');
    expect(plan(LEDGER_QUERIES.PRUNE)).not.toMatch(/SCAN requests(?! USING COVERING INDEX requests_by_seq)/);
    db.close();
  });

  it('waiting for a locked ledger does not hold the event loop: one look without a wait per 25 ms', () => {
    const dir = tempDir();
    const clock = fakeClock(96_000_000);
    const { ledger } = BudgetLedger.open(dir, 'k', 1000, clock.t);
    const budget = new RequestBudget({ count: 5, windowMs: 1000 }, clock, ledger);
    const holder = new Database(join(dir, 'budget.db'));
    holder.exec('BEGIN IMMEDIATE');
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) {
      // Four streams asking each time; 10 ms of waiting on the lock at each was 4 s here.
      for (let s = 0; s < 4; s++) expect(budget.tryAcquire()).toBeUndefined();
      clock.t += 25;
    }
    expect(performance.now() - t0).toBeLessThan(1000);
    holder.exec('ROLLBACK');
    clock.t += 25;
    expect(budget.tryAcquire()).toBeDefined();
    holder.close();
    ledger.close();
  });

  it("a clock set back by more than a window: the others' rows read before are read afresh, not held for the step", () => {
    const dir = tempDir();
    let wall = 97_000_000;
    const a = new RequestBudget({ count: 2, windowMs: 1000 }, { now: () => wall, sleep: async () => {} }, open(dir, 'k', wall));
    const b = new RequestBudget({ count: 2, windowMs: 1000 }, { now: () => wall, sleep: async () => {} }, open(dir, 'k', wall));
    for (let i = 0; i < 2; i++) (b.tryAcquire() as () => void)();
    expect(a.tryAcquire()).toBeUndefined(); // A has read B's two
    // An hour back: B's rows are an hour ahead (they cannot be); held as read, A sent nothing for the hour.
    wall -= 3_600_000;
    expect(a.tryAcquire()).toBeDefined();
  });

  it('budget.db removed alone, its -wal and -shm left: a new ledger starts without them, and the running one goes on', () => {
    const dir = tempDir();
    const path = join(dir, 'budget.db');
    const clock = fakeClock(98_000_000);
    const one = { count: 1, windowMs: 1000 };
    const a = new RequestBudget(one, clock, BudgetLedger.open(dir, 'k', 1000, clock.t, { warn: () => {} }).ledger);
    (a.tryAcquire() as () => void)();
    const inode = (suffix: string) => (existsSync(path + suffix) ? statSync(path + suffix).ino : -1);
    const before = [inode('-wal'), inode('-shm')];
    rmSync(path);
    // A new process: the old log and shared memory are not its own (joined, a pull died of SIGBUS).
    clock.t += 1100;
    const b = new RequestBudget(one, clock, open(dir, 'k', clock.t));
    expect(inode('-wal')).not.toBe(before[0]);
    expect(inode('-shm')).not.toBe(before[1]);
    (b.tryAcquire() as () => void)();
    // A opens the new file again within 2 s and sees B's request.
    clock.t += 950;
    expect(a.tryAcquire()).toBeUndefined();
    const db = new Database(path, { readonly: true });
    expect(db.pragma('quick_check', { simple: true })).toBe('ok');
    db.close();
  });
});

describe("what is at the ledger's path is left as it was when it is not a file of the ledger's own", () => {
  // A symbolic link there is refused (exit 2): test/symlinks.test.ts.
  it("a hard link, a named pipe, another program's database: one warning each, the sync goes on, nothing changed or waited on", async () => {
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
      ['hard link', (p) => linkSync(victim, p), /has 2 names \(hard links\)/],
      ['named pipe', (p) => execFileSync('mkfifo', [p]), /is not a file \(a folder, a named pipe or a device\)/],
      ['foreign database', (p) => copyFileSync(foreign, p), /holds tables that are not the ledger's \(notes\)/],
      // SQLite refuses anything but a file at the WAL's name itself, but said only "cannot write <folder> (SQLITE_CANTOPEN)".
      ['named pipe at -wal', (p) => execFileSync('mkfifo', [`${p}-wal`]), /budget\.db-wal is not a file: remove it/],
    ];
    for (const [name, make, said] of cases) {
      const state = tempDir();
      mkdirSync(join(state, 'campaign-sync'));
      const path = join(state, 'campaign-sync', 'budget.db');
      make(path);
      const before = name === 'foreign database' ? readFileSync(path) : undefined;
      const r = await cli(['campaigns', '--base-url', s.url], {
        env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state },
        timeoutMs: 20_000,
      });
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
    // The hard link's target kept its mode and bytes; the other program's database too.
    expect(statSync(victim).mode & 0o777).toBe(0o644);
    expect(readFileSync(victim, 'utf8')).toBe('my notes\n');
    expect(readFileSync(foreign)).toEqual(foreignBytes);
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
