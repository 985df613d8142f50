/**
 * A bulk erasure asks: `forget --older-than` erases nothing where no one can be asked (no terminal:
 * cron, a pipe, --json) unless --yes says so, and says so in one line (exit 2); --dry-run only
 * counts; a profile's retention applied by pull is configuration and asks nothing; `forget --user`
 * is as it was. The question on a real terminal: test/e2e/forget-ask.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { Database } from '../../../src/store/sqlite/driver.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

function run(s: RunningSimulator, args: string[], env: Record<string, string> = {}) {
  return runCli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url, ...env } });
}

/** Rows of every table an erasure touches. */
function counts(db: string): Record<string, number> {
  const d = new Database(db, { readonly: true });
  try {
    const out: Record<string, number> = {};
    for (const t of ['session_results', 'role_results', 'score_details', 'eval_results', 'past_versions', 'quarantine'])
      out[t] = Number(d.prepare(`SELECT count(*) FROM ${t}`).pluck().get());
    return out;
  } finally {
    d.close();
  }
}

async function pulled() {
  const s = await sim({ campaigns: 2, records: 15 });
  const db = join(tempDir(), 'm.db');
  const r = await run(s, ['pull', '--db', db]);
  expect(r.code, r.stderr).toBe(0);
  return { s, db };
}

describe('forget --older-than where no one can be asked', () => {
  it('without --yes: exit 2, one line saying to add --yes, nothing erased', async () => {
    const { s, db } = await pulled();
    const before = counts(db);
    expect(before.session_results).toBeGreaterThan(0);
    const r = await run(s, ['forget', '--db', db, '--older-than', '1s']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^campaign-sync: forget --older-than 1s .*add --yes.*--dry-run/);
    expect(counts(db)).toEqual(before);
  });

  it('--json is a script too: exit 2 and the error document, nothing erased', async () => {
    const { s, db } = await pulled();
    const before = counts(db);
    const r = await run(s, ['forget', '--db', db, '--older-than', '1s', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ exit_code: 2, error: expect.stringContaining('--yes') });
    expect(counts(db)).toEqual(before);
  });

  it('--yes erases; --dry-run prints the counts of each table and erases nothing', async () => {
    const { s, db } = await pulled();
    const before = counts(db);
    const dry = await run(s, ['forget', '--db', db, '--older-than', '1s', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(counts(db)).toEqual(before);
    const lines = dry.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(new RegExp(`^Results dated before \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z in ${db}:$`));
    for (const t of ['session_results', 'role_results', 'score_details', 'eval_results'])
      expect(lines, t).toContainEqual(expect.stringMatching(new RegExp(`^  ${t} +${(before[t] as number).toLocaleString('en-US')}$`)));
    expect(lines.at(-1)).toBe('Nothing was erased (--dry-run).');

    const done = await run(s, ['forget', '--db', db, '--older-than', '1s', '--yes', '--json']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout).removed).toMatchObject({
      session_results: before.session_results,
      role_results: before.role_results,
      score_details: before.score_details,
      eval_results: before.eval_results,
    });
    expect(counts(db)).toMatchObject({ session_results: 0, role_results: 0, score_details: 0, eval_results: 0 });
  });

  it('--dry-run does not go with --user (which would otherwise erase): exit 2, nothing erased', async () => {
    const { s, db } = await pulled();
    const before = counts(db);
    const d = new Database(db, { readonly: true });
    const email = String(d.prepare('SELECT user_email FROM session_results LIMIT 1').pluck().get());
    d.close();
    const r = await run(s, ['forget', '--db', db, '--user', email, '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^campaign-sync: forget: --dry-run goes with --older-than/);
    expect(counts(db)).toEqual(before);
    // forget --user asks nothing, as before.
    const gone = await run(s, ['forget', '--db', db, '--user', email]);
    expect(gone.code, gone.stderr).toBe(0);
    expect(counts(db).session_results).toBeLessThan(before.session_results as number);
  });

  it("a profile's retention, applied by pull, is configuration: it erases without a terminal or --yes", async () => {
    const s = await sim({ campaigns: 2, records: 15 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, `default_profile = "keep"\n[profiles.keep]\nretention = "1s"\n`);
    const r = await run(s, ['pull', '--db', db, '--config', config, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(counts(db)).toMatchObject({ session_results: 0, role_results: 0 });
  });
});
