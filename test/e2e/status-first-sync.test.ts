/**
 * `status --check` while a first backfill runs in another process: the streams it has not finished
 * are in their first sync (WARNING, exit 4; Nagios 1), named with the process and since when, not
 * CRITICAL "never synced". Once that process is gone, a stream that never synced is what it is.
 * The pull is held mid-way by its request budget (2 requests per 30 s, 10 records a page): it has
 * committed a page and has hundreds to go whatever the machine's speed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite/driver.js';
import { sim, startCli, tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';

/** Streams with a committed page and no success yet. */
function begun(db: string): number {
  try {
    const d = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return Number(d.prepare('SELECT count(*) FROM sync_state WHERE records > 0 AND last_success_at IS NULL').pluck().get());
    } finally {
      d.close();
    }
  } catch {
    return 0;
  }
}

async function until(what: string, ok: () => boolean, alive: () => boolean): Promise<void> {
  for (;;) {
    if (ok()) return;
    if (!alive()) throw new Error(`the pull ended before ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('status --check during a first backfill', () => {
  it('names the sync in progress: WARNING with its pid and start, not CRITICAL', async () => {
    const s = await sim({ campaigns: 2, records: 2000 });
    const db = join(tempDir(), 'm.db');
    const pull = startCli(['pull', '--db', db, '--page-size', '10', '--rate-limit', '2/30s', '--quiet'], {
      env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    const pid = pull.child.pid as number;
    try {
      await until(
        'a page was committed',
        () => begun(db) > 0,
        () => pull.child.exitCode === null,
      );

      const nagios = await runCli(['status', '--db', db, '--check', '--nagios']);
      expect(nagios.code, nagios.stdout).toBe(1);
      expect(nagios.stdout).toMatch(
        new RegExp(`^CAMPAIGN-SYNC WARNING - first sync in progress since \\d{4}-[\\d-]+T[\\d:.]+Z \\([^)]+\\), pid ${pid} on \\S+: `),
      );
      expect(nagios.stdout).not.toMatch(/CRITICAL|never synced/);

      const check = await runCli(['status', '--db', db, '--check']);
      expect(check.code).toBe(4);
      expect(check.stdout).toMatch(new RegExp(`: first sync in progress since .*, pid ${pid} on `));
      expect(check.stdout).toMatch(/^WARNING: 0 of 2 streams healthy/m);

      const json = JSON.parse((await runCli(['status', '--db', db, '--check', '--json'])).stdout);
      expect(json.status).toBe('degraded');
      expect(json.sync_in_progress).toMatchObject({ pid });
      expect(json.unhealthy.map((u: { reason: string }) => u.reason)).toContain('syncing');
      expect(pull.child.exitCode).toBeNull();
    } finally {
      pull.child.kill('SIGTERM');
    }
    expect((await pull.exited).code).toBe(0);
    // Nobody syncs it now: the streams that never finished are never synced, and none is healthy.
    const after = await runCli(['status', '--db', db, '--check', '--nagios']);
    expect(after.code).toBe(2);
    expect(after.stdout).toMatch(/^CAMPAIGN-SYNC CRITICAL - 0 of 2 streams healthy \(2 never synced\)/);
  });
});
