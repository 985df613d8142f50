/**
 * Ctrl-C in a real terminal behaves as SIGINT (PRODUCT.md §1): with the spinner running, typing 0x03
 * stops the pass after the page in flight, commits, and exits 0. Runs in CI too: the child gets a
 * pseudo-terminal and no CI variable, so the spinner really runs.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite/driver.js';
import { sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';

/** A terminal session's environment: no CI (it turns spinners off), none of our settings from the tester's shell. */
function terminalEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', ...extra };
  for (const name of ['CI', 'NO_COLOR', 'CAMPAIGN_SYNC_BASE_URL', 'CAMPAIGN_SYNC_API_KEY', 'CAMPAIGN_SYNC_DB', 'CAMPAIGN_SYNC_RATE_LIMIT'])
    if (!(name in extra)) delete env[name];
  return env;
}

/** Rows and checkpoints agree in every stream; returns the records stored. */
function storedConsistently(dbPath: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok');
    let total = 0;
    for (const s of db.prepare('SELECT campaign_id, endpoint, cursor, records FROM sync_state').all() as Array<{
      campaign_id: string;
      endpoint: string;
      cursor: number | null;
      records: number;
    }>) {
      const table = s.endpoint === 'session' ? 'session_results' : 'role_results';
      const [count, max] = db.prepare(`SELECT count(*), max(order_index) FROM ${table} WHERE campaign_id = ?`).raw().get(s.campaign_id) as [
        number,
        number | null,
      ];
      expect(count).toBe(s.records);
      expect(max).toBe(s.cursor);
      total += count;
    }
    return total;
  } finally {
    db.close();
  }
}

/** A spinner frame of ora's default "dots" (maybe coloured) followed by the live counts, past the first page. */
const SPINNING = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏](\u001b\[\d+m)? \d+\/\d+ streams, [1-9][\d,]* records/;

describe('Ctrl-C in a terminal', () => {
  it('pull with a spinner stops on 0x03 within seconds, exit 0, rows and checkpoints agree', async () => {
    const s = await sim({ campaigns: 2, records: 1000 });
    const db = join(tempDir(), 'm.db');
    // 10 records a page at 10 requests a second: the whole pull would take 20 s.
    const run = ptyCli(['pull', '--db', db, '--page-size', '10', '--rate-limit', '10/1s'], {
      env: terminalEnv({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey }),
      limitMs: 40_000,
    });
    try {
      await run.waitFor(SPINNING, 15_000);
      const t0 = Date.now();
      run.type('\x03');
      const code = await run.exited;
      expect(code, run.screen()).toBe(0);
      expect(Date.now() - t0).toBeLessThan(3000);
      const stored = storedConsistently(db);
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(2000);
    } finally {
      run.kill();
    }
  });

  it('demo with a spinner stops on 0x03 as well', async () => {
    const dir = tempDir();
    // Enough records (180,000) that the in-process pull is still running when the key is typed.
    const run = ptyCli(['demo', '--db', join(dir, 'demo.db'), '--records', '30000'], { env: terminalEnv(), cwd: dir, limitMs: 40_000 });
    try {
      await run.waitFor(SPINNING, 30_000);
      const t0 = Date.now();
      run.type('\x03');
      const code = await run.exited;
      expect(code, run.screen()).toBe(0);
      expect(Date.now() - t0).toBeLessThan(3000);
      const stored = storedConsistently(join(dir, 'demo.db'));
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(6 * 30_000);
    } finally {
      run.kill();
    }
  });
});

describe('the y/N prompt of reset', () => {
  /** A mirror with checkpoints, made by a quiet pull. */
  async function pulled(): Promise<string> {
    const s = await sim({ campaigns: 2, records: 3 });
    const db = join(tempDir(), 'm.db');
    const { cli } = await import('../helpers/index.js');
    expect(
      (await cli(['pull', '--db', db, '--quiet'], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code,
    ).toBe(0);
    return db;
  }

  const cursors = (db: string) => {
    const d = new Database(db, { readonly: true });
    try {
      return d.prepare('SELECT count(*) FROM sync_state WHERE cursor IS NOT NULL').pluck().get();
    } finally {
      d.close();
    }
  };

  it('Ctrl-C at the prompt: "nothing was reset" on a line of its own, exit 130, checkpoints kept', async () => {
    const db = await pulled();
    const run = ptyCli(['reset', '--db', db], { env: terminalEnv(), limitMs: 30_000 });
    try {
      await run.waitFor(/\(y\/N\) /, 15_000);
      run.type('\x03');
      expect(await run.exited, run.screen()).toBe(130);
      const screen = run.screen();
      expect(screen).not.toContain('internal error');
      // The prompt's line ends before the message: never `(y/N) campaign-sync: …` on one line.
      expect(screen).toMatch(/\(y\/N\) [^\n]*\ncampaign-sync: nothing was reset\r?\n$/);
      expect(screen).not.toMatch(/\(y\/N\) [^\n]*campaign-sync/);
      expect(cursors(db)).toBe(2);
    } finally {
      run.kill();
    }
  });

  it('Ctrl-D (end of input) is the default answer, no: exit 0', async () => {
    const db = await pulled();
    const run = ptyCli(['reset', '--db', db], { env: terminalEnv(), limitMs: 30_000 });
    try {
      await run.waitFor(/\(y\/N\) /, 15_000);
      run.type('\x04');
      expect(await run.exited, run.screen()).toBe(0);
      expect(run.screen()).toMatch(/\(y\/N\) [^\n]*\r?\nNothing was reset\.\r?\n$/);
      expect(cursors(db)).toBe(2);
    } finally {
      run.kill();
    }
  });
});
