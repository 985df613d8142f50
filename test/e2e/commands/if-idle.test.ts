/**
 * `pull --if-idle` (cron's `flock -n`): when another campaign-sync holds the lock, exit 0 and say
 * nothing, so a tick during a long backfill mails nobody. Only that lock: the rest is as without it.
 * `watch --if-idle` is refused: a watch runs until stopped.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunLock } from '../../../src/store/sqlite/run-lock.js';
import { cli, sim, tempDir } from '../../helpers/index.js';

describe('pull --if-idle', () => {
  it('with the lock held by another process: exit 0, nothing on stdout or stderr, nothing done', async () => {
    const s = await sim({ campaigns: 1, records: 3 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const db = join(tempDir(), 'm.db');
    const lock = RunLock.acquire(db);
    try {
      const before = s.stats.requests;
      for (const extra of [[], ['--quiet']]) {
        const idle = await cli(['pull', '--db', db, '--if-idle', ...extra], { env });
        expect(idle.code).toBe(0);
        expect(idle.stdout + idle.stderr).toBe('');
      }
      expect(s.stats.requests).toBe(before);
      // --json: a script reading stdout still gets a document.
      const json = await cli(['pull', '--db', db, '--if-idle', '--json'], { env });
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({
        ran: false,
        exit_code: 0,
        reason: expect.stringMatching(/another campaign-sync is syncing/),
      });
      // Without it: exit 75 with the holder named.
      const busy = await cli(['pull', '--db', db, '--quiet'], { env });
      expect(busy.code).toBe(75);
      expect(busy.stderr).toMatch(/another campaign-sync is syncing .*m\.db \(pid \d+/);
    } finally {
      lock.release();
    }
    // Idle: it pulls as usual.
    const ran = await cli(['pull', '--db', db, '--if-idle', '--quiet'], { env });
    expect(ran.code).toBe(0);
    expect(ran.stdout + ran.stderr).toBe('');
    expect((await cli(['status', '--check', '--db', db])).code).toBe(0);
  });

  it('an NDJSON folder written by another process is a held lock too; a failure is still said', async () => {
    const s = await sim({ campaigns: 1, records: 3 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const dir = tempDir();
    const lock = RunLock.acquireFolder(dir);
    try {
      const idle = await cli(['pull', '--db', join(dir, 'other.db'), '--out', dir, '--if-idle', '--quiet'], { env });
      expect(idle.code).toBe(0);
      expect(idle.stdout + idle.stderr).toBe('');
    } finally {
      lock.release();
    }
    // --if-idle does not hide what is not a held lock: the service refusing the key is still exit 3.
    const refused = await cli(['pull', '--db', join(dir, 'm.db'), '--if-idle', '--quiet'], {
      env: { ...env, CAMPAIGN_SYNC_API_KEY: 'wrong' },
    });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('401');
  });

  it('watch --if-idle is refused with a line that says what to run instead', async () => {
    const r = await cli([
      'watch',
      '--if-idle',
      '--db',
      join(tempDir(), 'm.db'),
      '--base-url',
      'http://127.0.0.1:9',
      '--api-key-file',
      '/dev/null',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^campaign-sync: --if-idle is for `pull` from cron; a watch runs until stopped/);
  });
});
