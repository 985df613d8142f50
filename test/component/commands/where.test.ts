/**
 * Saying where things are: a watch starts with one line (service, mirror, interval, budget) for
 * journald; a pull says where it wrote (a profile may have chosen it); a refused connection names the
 * URL and what set it; a 404 before any answer says the base URL's path is probably wrong.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe('where things are', () => {
  it('watch starts with one line naming the service, the mirror, the interval and the budget', async () => {
    const s = await sharedSim({ campaigns: 1, records: 2 });
    const db = join(tempDir(), 'm.db');
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const r = await runCli(['watch', '--db', db, '--base-url', s.url, '--max-cycles', '1', '--interval', '90s', '--rate-limit', '20/2s'], {
      env,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n')[0]).toBe(`watching ${s.url} into ${db} every 90s, request budget 20/2s`);
    // --json keeps it on stderr (stdout holds the passes' lines); --quiet silences it.
    const json = await runCli(['watch', '--db', db, '--base-url', s.url, '--max-cycles', '1', '--json'], { env });
    expect(json.stderr).toContain(`watching ${s.url} into ${db} every 2m, request budget 100/1m`);
    const quiet = await runCli(['watch', '--db', db, '--base-url', s.url, '--max-cycles', '1', '--quiet'], { env });
    expect(quiet.stdout + quiet.stderr).toBe('');
  });

  it('a pull whose profile chose the database says where it wrote; NDJSON names the folder and the database', async () => {
    const s = await sharedSim({ campaigns: 1, records: 2 });
    const dir = tempDir();
    writeFileSync(join(dir, 'campaign-sync.toml'), `default_profile = "p"\n[profiles.p]\nbase_url = "${s.url}"\ndb = "mirror/x.db"\n`);
    mkdirSync(join(dir, 'mirror'));
    const r = await runCli(['pull'], { cwd: dir, env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`written to ${join(dir, 'mirror', 'x.db')}`);
    const json = JSON.parse((await runCli(['pull', '--json'], { cwd: dir, env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).stdout);
    expect(json.written_to).toEqual({ format: 'sqlite', db: join(dir, 'mirror', 'x.db') });
    const out = join(dir, 'drop');
    mkdirSync(out);
    const nd = await runCli(['pull', '--db', join(dir, 'n.db'), '--out', out], { cwd: dir, env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(nd.code, nd.stderr).toBe(0);
    expect(nd.stdout).toContain(`written to ${out} (NDJSON; checkpoints in ${join(dir, 'n.db')})`);
  });

  it('a refused connection names the URL and what set it', async () => {
    const port = await closedPort();
    const db = join(tempDir(), 'm.db');
    const base = `http://127.0.0.1:${port}/svc`;
    const flag = await runCli(['pull', '--db', db, '--base-url', base, '--max-retries', '0'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'sk-test-key' },
    });
    expect(flag.code).toBe(5);
    expect(flag.stderr).toContain(`ECONNREFUSED: nothing listens at ${base} (connection refused): check --base-url`);
    const env = await runCli(['pull', '--db', db, '--max-retries', '0'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'sk-test-key', CAMPAIGN_SYNC_BASE_URL: base },
    });
    expect(env.stderr).toContain('check CAMPAIGN_SYNC_BASE_URL');
  });

  it('a 404 before any answer says the base URL path is probably wrong (a later one keeps its line: client.test.ts)', async () => {
    const s = await sharedSim({ campaigns: 1, records: 2 });
    const db = join(tempDir(), 'm.db');
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const r = await runCli(['pull', '--db', db, '--base-url', `${s.url}/api`], { env });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      new RegExp(
        `^campaign-sync: nothing synced: 404 Not found: nothing at ${s.url}/api/v1/campaigns; the path of --base-url \\(/api\\) is probably wrong: give the URL that /v1 hangs from — GET /v1/campaigns \\[request_id [^\\]]+\\]\\n$`,
      ),
    );
    // The right URL: no 404 at all.
    expect((await runCli(['pull', '--db', db, '--base-url', s.url, '--quiet'], { env })).code).toBe(0);
  });
});
