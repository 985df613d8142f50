/**
 * status --check: exit 0 when every stream succeeded within --max-age and none is
 * failing, 4 when some are stale or failing, 5 when none is healthy; one line per unhealthy stream.
 * The rule is one pure function (sync/health.ts), also behind watch's /healthz.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { status } from '../../../src/commands/status.js';
import { resolveSettings } from '../../../src/config/settings.js';
import { streamId } from '../../../src/core/types.js';
import { SqliteCheckpoints } from '../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { RunLock } from '../../../src/store/sqlite/run-lock.js';
import { assessHealth } from '../../../src/sync/health.js';
import { relativeTime } from '../../../src/ui/health.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const MIN = 60_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

/** A database whose streams last succeeded (or failed) at the given times. */
function mirror(streams: Array<{ success?: number; error?: string }>): string {
  const path = join(tempDir(), 'm.db');
  const db = openDatabase(path);
  const state = new SqliteCheckpoints(db);
  streams.forEach((s, i) => {
    const id = streamId(`c${i}`, 'session', null);
    state.ensure(id);
    if (s.success !== undefined) state.success(id, ago(s.success));
    if (s.error !== undefined) state.failure(id, s.error, ago(MIN));
  });
  db.close();
  return path;
}

async function check(db: string, extra: Record<string, unknown> = {}) {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((t) => written.push(String(t)) > 0);
  try {
    const code = await status(resolveSettings('status', { db, check: true, ...extra }));
    return { code, stdout: written.join('') };
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('status --check', () => {
  it('healthy: exit 0 and one OK line', async () => {
    const r = await check(mirror([{ success: MIN }, { success: 2 * MIN }]));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('OK: 2 of 2 streams healthy (max age 10m)\n');
  });

  it('stale: exit 4, naming the stream and its age', async () => {
    const r = await check(mirror([{ success: MIN }, { success: 42 * MIN }]));
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('c1 (session): stale: last success 42 min ago, older than --max-age 10m\n');
    expect(r.stdout).toContain('WARNING: 1 of 2 streams healthy');
    // A longer --max-age makes it fresh again.
    expect((await check(mirror([{ success: MIN }, { success: 42 * MIN }]), { maxAge: '1h' })).code).toBe(0);
  });

  it('failing: exit 4 with the error', async () => {
    const r = await check(mirror([{ success: MIN }, { success: MIN, error: 'GET …: 503 busy [request_id r-9]' }]));
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('c1 (session): failing since 1 min ago: GET …: 503 busy [request_id r-9]');
  });

  it('none healthy: exit 5 (no streams at all too)', async () => {
    const r = await check(mirror([{ success: 60 * MIN }, {}]));
    expect(r.code).toBe(5);
    expect(r.stdout).toContain('c1 (session): never synced successfully');
    expect(r.stdout).toContain('CRITICAL: 0 of 2 streams healthy');
    expect((await check(mirror([]))).code).toBe(5);
  });

  it('--json: one document with the verdict and each unhealthy stream', async () => {
    const r = await check(mirror([{ success: MIN }, { success: 42 * MIN }]), { json: true });
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'degraded',
      exit_code: 4,
      healthy: 1,
      streams: 2,
      unhealthy: [{ reason: 'stale' }],
    });
  });

  it('--quiet silences an OK, never the reason of a failure', async () => {
    expect((await check(mirror([{ success: MIN }]), { quiet: true })).stdout).toBe('');
    const r = await check(mirror([{ success: MIN }, { success: 42 * MIN }]), { quiet: true });
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('c1 (session): stale: last success 42 min ago');
    expect(r.stdout).toContain('WARNING: 1 of 2 streams healthy');
    const down = await check(mirror([{}]), { quiet: true });
    expect(down.code).toBe(5);
    expect(down.stdout).toContain('CRITICAL: 0 of 1 streams healthy');
  });

  it('--max-age without --check is a usage error', async () => {
    await expect(status(resolveSettings('status', { db: mirror([]), maxAge: '5m' }))).rejects.toThrow(/--max-age goes with --check/);
  });
});

describe('status --check --nagios', () => {
  it('OK: exit 0, one status line with perfdata (label=value;warn;crit;min;max)', async () => {
    const r = await check(mirror([{ success: MIN }, { success: 2 * MIN }]), { nagios: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'CAMPAIGN-SYNC OK - 2 of 2 streams healthy, max age 10m | healthy=2;;;0;2 stale=0;;;0;2 failing=0;;;0;2 never=0;;;0;2 syncing=0;;;0;2 unlisted=0;;;0 oldest_success_age=120s;600;;0\n',
    );
  });

  it('some stale or failing: WARNING, exit 1, one line per stream after the status line; never a | in the text', async () => {
    const r = await check(mirror([{ success: MIN }, { success: 42 * MIN }, { success: MIN, error: 'GET a|b: 503 busy' }]), {
      nagios: true,
      quiet: true,
    });
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^CAMPAIGN-SYNC WARNING - 1 of 3 streams healthy \(1 failing, 1 stale\), max age 10m \| healthy=1;;;0;3 stale=1;;;0;3 failing=1;;;0;3 /,
    );
    expect(lines.slice(1)).toEqual([
      'c1 (session): stale: last success 42 min ago, older than --max-age 10m',
      'c2 (session): failing since 1 min ago: GET a/b: 503 busy',
    ]);
  });

  it('none healthy: CRITICAL, exit 2; no streams at all too', async () => {
    const r = await check(mirror([{ success: 60 * MIN }, {}]), { nagios: true });
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^CAMPAIGN-SYNC CRITICAL - 0 of 2 streams healthy \(1 stale, 1 never synced\)/);
    const none = await check(mirror([]), { nagios: true });
    expect(none.code).toBe(2);
    expect(none.stdout).toMatch(/^CAMPAIGN-SYNC CRITICAL - no streams synced yet \(run `campaign-sync pull`\) \| healthy=0;;;0;0 /);
  });

  it('a mirror that cannot be read, or a bad flag: UNKNOWN, exit 3, the reason on the status line', async () => {
    const missing = await check(join(tempDir(), 'nowhere.db'), { nagios: true });
    expect(missing.code).toBe(3);
    expect(missing.stdout).toMatch(/^CAMPAIGN-SYNC UNKNOWN - .*nowhere\.db.*\n$/);
    const badAge = await check(mirror([{ success: MIN }]), { nagios: true, maxAge: 'soon' });
    expect(badAge.code).toBe(3);
    expect(badAge.stdout).toMatch(/^CAMPAIGN-SYNC UNKNOWN - .*--max-age/);
    const alone = await check(mirror([{ success: MIN }]), { nagios: true, check: false });
    expect(alone.code).toBe(3);
    expect(alone.stdout).toBe('CAMPAIGN-SYNC UNKNOWN - --nagios goes with --check\n');
    const json = await check(mirror([{ success: MIN }]), { nagios: true, json: true });
    expect(json.code).toBe(3);
    expect(json.stdout).toMatch(/^CAMPAIGN-SYNC UNKNOWN - --nagios .* does not go with --json\n$/);
  });
});

describe('the health rule', () => {
  it('is pure: the same rows at another time give another verdict', () => {
    const rows = [{ stream: 's', last_success_at: '2026-01-01T00:00:00Z', last_error: null, last_error_at: null }];
    const t = Date.parse('2026-01-01T00:00:00Z');
    expect(assessHealth(rows, t + 9 * MIN, 10 * MIN).verdict).toBe('ok');
    expect(assessHealth(rows, t + 11 * MIN, 10 * MIN).verdict).toBe('down');
  });
});

describe('human status', () => {
  it('shows relative times; the sync in progress on stderr, so a pipe reads the TSV from its first line', async () => {
    const db = mirror([{ success: 4 * MIN }]);
    const lock = RunLock.acquire(db);
    const written: string[] = [];
    const said: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((t) => written.push(String(t)) > 0);
    const spyErr = vi.spyOn(process.stderr, 'write').mockImplementation((t) => said.push(String(t)) > 0);
    try {
      expect(await status(resolveSettings('status', { db }))).toBe(0);
    } finally {
      spy.mockRestore();
      spyErr.mockRestore();
      lock.release();
    }
    const text = written.join('');
    expect(text.split('\n')[0]).toBe('campaign\tendpoint\treport\tcursor\trecords\tid conflicts\tquarantined\tlast success\tlast error');
    expect(text).not.toContain('sync in progress');
    expect(text).toContain('4 min ago');
    expect(said.join('')).toMatch(new RegExp(`^sync in progress \\(pid ${process.pid} on .+, since \\d{4}-.+Z, 0 s ago\\)$`, 'm'));
  });

  it('relative times', () => {
    const now = Date.parse('2026-01-03T00:00:00Z');
    expect(relativeTime(null, now)).toBe('never');
    expect(relativeTime('2026-01-02T23:59:48Z', now)).toBe('12 s ago');
    expect(relativeTime('2026-01-02T21:00:00Z', now)).toBe('3 h ago');
    expect(relativeTime('2026-01-01T00:00:00Z', now)).toBe('2 d ago');
  });
});

describe('a campaign the service no longer lists', () => {
  const env = (s: { url: string; apiKey: string }) => ({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey });

  it('is named by pull, marked in status, and left out of status --check instead of stale for ever', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    // The same service (seed and address): the first two campaigns of four are the two of the second list.
    const before = await sim({ seed: 5, campaigns: 4, records: 3 });
    expect((await runCli(['pull', '--db', db, '--quiet'], { env: env(before) })).code).toBe(0);
    await before.close();
    // Every stream last succeeded an hour ago (set, not waited for): the two still listed are fresh
    // again after the next pull, the two unlisted would be stale for ever.
    const aged = openDatabase(db);
    aged.prepare('UPDATE sync_state SET last_success_at = ?').run(new Date(Date.now() - 3_600_000).toISOString());
    aged.close();
    const after = await sim({ seed: 5, campaigns: 2, records: 3, port: before.port });
    const pulled = await runCli(['pull', '--db', db], { env: env(after) });
    expect(pulled.code, pulled.stderr).toBe(0);
    const warned = pulled.stderr.split('\n').filter((l) => l.includes('is no longer listed by the service (last listed '));
    expect(warned).toHaveLength(2);
    // Its streams' last success is an hour old, the listed ones' fresh: stale (exit 4) before.
    const check = await runCli(['status', '--check', '--max-age', '10m', '--db', db]);
    expect(check.code, check.stdout).toBe(0);
    const lines = check.stdout.trim().split('\n');
    expect(lines.filter((l) => l.includes(': not listed by the service since '))).toHaveLength(2);
    expect(lines.at(-1)).toMatch(/^OK: 2 of 2 streams healthy/);
    const doc = JSON.parse((await runCli(['status', '--check', '--max-age', '10m', '--json', '--db', db])).stdout);
    expect(doc.unlisted).toHaveLength(2);
    expect(doc.unlisted[0].listed_last_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const all = JSON.parse((await runCli(['status', '--json', '--db', db])).stdout).streams;
    expect(all.filter((s: { unlisted_since: string | null }) => s.unlisted_since !== null)).toHaveLength(2);
    // Listed again: back in the check, nothing marked.
    await after.close();
    const again = await sim({ seed: 5, campaigns: 4, records: 3, port: before.port });
    expect((await runCli(['pull', '--db', db, '--quiet'], { env: env(again) })).code).toBe(0);
    const back = JSON.parse((await runCli(['status', '--check', '--json', '--db', db])).stdout);
    expect(back.unlisted).toHaveLength(0);
    expect(back.streams).toBe(4);
  });

  it('is not one another key lists: workers with different keys share a mirror, each seeing its own campaigns', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    // One service (one base URL: a mirror mirrors one), two keys, each listing its own campaigns.
    const a = await sim({ seed: 5, campaigns: 2, records: 3 });
    expect((await runCli(['pull', '--db', db, '--quiet'], { env: env(a) })).code).toBe(0);
    await a.close();
    const b = await sim({ seed: 9, campaigns: 2, records: 3, apiKey: 'other-key', port: a.port });
    // The second key's list holds none of the first's campaigns: they are not "no longer listed".
    const second = await runCli(['pull', '--db', db], { env: env(b) });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toContain('no longer listed');
    const doc = JSON.parse((await runCli(['status', '--check', '--json', '--db', db])).stdout);
    expect(doc.streams).toBe(4);
    expect(doc.unlisted).toHaveLength(0);
    // `campaigns` keeps its key's list too: the first key's list, now one campaign short.
    await b.close();
    const fewer = await sim({ seed: 5, campaigns: 1, records: 3, port: a.port });
    expect((await runCli(['campaigns', '--db', db], { env: env(fewer) })).code).toBe(0);
    const after = JSON.parse((await runCli(['status', '--check', '--json', '--db', db])).stdout);
    expect(after.unlisted).toHaveLength(1);
    expect(after.streams).toBe(3);
  });
});
