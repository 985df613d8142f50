/**
 * `forget --older-than` in a real terminal (a pseudo-terminal of 80 columns): it shows what it would
 * erase, table by table, and asks; `n` (or just Enter) erases nothing, `y` erases what it showed.
 * Without a terminal it needs --yes: test/component/commands/forget-ask.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite/driver.js';
import { sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';
import { runCli } from '../helpers/run-cli.js';

/** A terminal session's environment: no CI (it keeps questions from being asked), none of our settings. */
function terminalEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color' };
  for (const name of ['CI', 'NO_COLOR', 'CAMPAIGN_SYNC_BASE_URL', 'CAMPAIGN_SYNC_API_KEY', 'CAMPAIGN_SYNC_DB']) delete env[name];
  return env;
}

const TABLES = ['session_results', 'role_results', 'score_details', 'eval_results'] as const;

function counts(db: string): Record<string, number> {
  const d = new Database(db, { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, Number(d.prepare(`SELECT count(*) FROM ${t}`).pluck().get())]));
  } finally {
    d.close();
  }
}

/** The count the question showed for each table (`  session_results    1,234`). */
function shown(screen: string): Record<string, number> {
  return Object.fromEntries(
    TABLES.map((t) => {
      const m = new RegExp(`^  ${t} +([\\d,]+)\\r?$`, 'm').exec(screen);
      return [t, m === null ? Number.NaN : Number((m[1] as string).replaceAll(',', ''))];
    }),
  );
}

async function mirror(): Promise<string> {
  const s = await sim({ campaigns: 2, records: 25 });
  const db = join(tempDir(), 'm.db');
  const r = await runCli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code, r.stderr).toBe(0);
  return db;
}

const QUESTION = /Erase them\? This cannot be undone\. \(y\/N\) /;

describe('forget --older-than on a terminal', () => {
  it('shows the counts of every table and asks; answered n, it erases nothing', async () => {
    const db = await mirror();
    const before = counts(db);
    const run = ptyCli(['forget', '--db', db, '--older-than', '1s'], { env: terminalEnv(), limitMs: 30_000 });
    try {
      await run.waitFor(QUESTION);
      const screen = run.screen();
      expect(screen).toMatch(/Results dated before \d{4}-\d\d-\d\dT[\d:.]+Z in /);
      expect(screen).toContain('The checkpoints stay: a pull does not bring these back.');
      // Every result of the simulator is older than a second: the question shows them all.
      expect(shown(screen)).toEqual(before);
      // Nothing is touched while the question waits.
      expect(counts(db)).toEqual(before);
      run.type('n\r');
      expect(await run.exited).toBe(0);
      expect(run.screen()).toMatch(/\(y\/N\) [^\n]*\r?\nNothing was erased\.\r?\n$/);
      expect(counts(db)).toEqual(before);
    } finally {
      run.kill();
    }
  });

  it('answered y, it erases what it showed', async () => {
    const db = await mirror();
    const before = counts(db);
    const run = ptyCli(['forget', '--db', db, '--older-than', '1s'], { env: terminalEnv(), limitMs: 30_000 });
    try {
      await run.waitFor(QUESTION);
      const asked = shown(run.screen());
      run.type('y\r');
      expect(await run.exited).toBe(0);
      expect(run.screen()).toMatch(/\(y\/N\) [^\n]*\r?\nErased the results dated before \S+: [\d,]+ session results/);
      const after = counts(db);
      expect(after).toEqual(Object.fromEntries(TABLES.map((t) => [t, 0])));
      expect(asked).toEqual(before);
    } finally {
      run.kill();
    }
  });
});
