/**
 * Forgetting every checkpoint costs the next pull minutes of the request budget: `reset` does it only
 * with --all, or after a yes on a terminal; a script without --all is refused (exit 2), changing nothing.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite/driver.js';
import { cli, sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';

function cursors(db: string): Array<bigint | null> {
  const d = new Database(db, { readonly: true });
  d.defaultSafeIntegers(true);
  const all = d.prepare('SELECT cursor FROM sync_state ORDER BY stream').pluck().all() as Array<bigint | null>;
  d.close();
  return all;
}

async function mirror() {
  const s = await sim({ campaigns: 2, records: 5 });
  const db = join(tempDir(), 'm.db');
  const pulled = await cli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(pulled.code, pulled.stderr).toBe(0);
  expect(cursors(db).every((c) => c !== null)).toBe(true);
  return db;
}

describe('reset of every stream', () => {
  it('without --all and without a terminal: exit 2, one line, nothing forgotten', async () => {
    const db = await mirror();
    const before = cursors(db);
    const run = await cli(['reset', '--db', db]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([
      'campaign-sync: reset: name the streams to forget with --campaign <id or name>, or pass --all to forget every checkpoint',
    ]);
    expect(cursors(db)).toEqual(before);
  });

  it('--all forgets every checkpoint; --all with --campaign is a usage error', async () => {
    const db = await mirror();
    const both = await cli(['reset', '--all', '--campaign', 'x', '--db', db]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--all forgets every checkpoint; it does not go with --campaign');
    const all = await cli(['reset', '--all', '--db', db, '--json']);
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout).reset).toBe(2);
    expect(cursors(db)).toEqual([null, null]);
  });

  it('on a terminal it asks: no keeps every checkpoint, yes forgets them', async () => {
    const db = await mirror();
    // A person at a terminal: no CI (it means nobody is there to answer), none of the tester's settings.
    const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', NO_COLOR: '1' };
    for (const name of ['CI', 'CAMPAIGN_SYNC_DB', 'CAMPAIGN_SYNC_BASE_URL', 'CAMPAIGN_SYNC_API_KEY']) delete env[name];
    const declined = ptyCli(['reset', '--db', db], { env, limitMs: 20_000 });
    await declined.waitFor(/Forget the checkpoints of all 2 streams in .*m\.db\? The next pull re-reads everything\. \(y\/N\)/);
    declined.type('n\r');
    expect(await declined.exited).toBe(0);
    expect(declined.screen()).toContain('Nothing was reset.');
    expect(cursors(db).every((c) => c !== null)).toBe(true);

    const accepted = ptyCli(['reset', '--db', db], { env, limitMs: 20_000 });
    await accepted.waitFor(/\(y\/N\)/);
    accepted.type('y\r');
    expect(await accepted.exited).toBe(0);
    expect(accepted.screen()).toMatch(/Forgot 2 checkpoints/);
    expect(cursors(db)).toEqual([null, null]);

    // Nothing left to forget: no question about "all 0 streams", and exit 0.
    const none = ptyCli(['reset', '--db', db], { env, limitMs: 20_000 });
    expect(await none.exited).toBe(0);
    expect(none.screen()).toMatch(/No checkpoints to forget in .*m\.db\./);
    expect(none.screen()).not.toMatch(/Forget the checkpoints|\(y\/N\)/);
  });
});

describe('selectors that match a campaign but select nothing', () => {
  it('reset --campaign of a campaign with no stream (a type not read) is exit 2, not "Forgot 0 checkpoints"', async () => {
    const s = await sim({ campaigns: 2, records: 5, unknownTypeCampaigns: 1 });
    const db = join(tempDir(), 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await cli(['pull', '--db', db], { env })).code).toBe(0);
    const skipped = s.data.campaigns.find((c) => c.type !== 'SESSION_COMPLETION' && c.type !== 'ROLE_SUBMISSION');
    expect(skipped).toBeDefined();
    const before = cursors(db);
    const run = await cli(['reset', '--campaign', String(skipped?.name), '--db', db]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`--campaign: "${skipped?.name}" has no stream in this database`);
    expect(cursors(db)).toEqual(before);
  });

  it('pull and reconcile: a --campaign that --type leaves out is exit 2 naming both, not "No streams to sync"', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const db = join(tempDir(), 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    for (const command of ['pull', 'reconcile']) {
      const run = await cli([command, '--db', db, '--campaign', String(session?.name), '--type', 'role'], { env });
      expect(run.code, `${command}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(`--campaign "${session?.name}" is a session campaign and --type role leaves it out: nothing to sync`);
    }
    // Without --campaign, --type alone still just filters.
    const all = await cli(['pull', '--db', db, '--type', 'role', '--json'], { env });
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout).records).toBe(5);
  });
});
