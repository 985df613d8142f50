/**
 * PostgreSQL URLs in messages: the password never shows, in the URL's user part or in a `password=`
 * query parameter, whatever the form (the Unix-socket form `user@/db?host=…` included); a URL no
 * driver can read is a usage error naming --db (exit 2), not a storage failure (74).
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor, UsageError } from '../src/errors.js';
import { PgDatabase } from '../src/store/pg/database.js';
import { checkPgUrl, redactUrl, scrub } from '../src/store/pg/url.js';
import { cli, sim, tempDir } from './helpers/index.js';

const SOCKET = 'postgresql://sync@/analytics?host=/var/run/postgresql&password=S3cretPG';

describe('redactUrl and scrub', () => {
  it('the Unix-socket form keeps its user and database, never the password', () => {
    expect(redactUrl(SOCKET)).toBe('postgresql://sync@/analytics');
    expect(redactUrl('postgresql://sync:pw@/analytics?host=/run/pg')).toBe('postgresql://sync@/analytics');
    expect(redactUrl('postgresql:///analytics?host=/run/pg&password=S3cretPG')).toBe('postgresql:///analytics');
    expect(redactUrl('postgres://u:pw@db.example:5432/m?sslmode=require&password=x')).toBe('postgres://u@db.example:5432/m');
  });

  it('an unparseable URL loses its user part (a password may hold / ? #) and its query', () => {
    for (const url of [
      'postgres://u:S3cretPG@h:99999/db?password=S3cretPG',
      'postgres://u:S3c/ret?PG@[::1:1/db',
      'postgres://[::1:1/db?password=S3cretPG',
    ]) {
      expect(redactUrl(url)).not.toMatch(/S3c|ret|PG/);
    }
    expect(redactUrl('postgres://u:S3cretPG@h:99999/db?password=S3cretPG')).toBe('postgres://h:99999/db');
  });

  it('scrub removes a query password, raw and decoded, from a driver message', () => {
    const url = 'postgresql://sync@/analytics?host=/run/pg&password=S3c%2Fret%20PG';
    const msg = scrub(`password authentication failed (tried "S3c/ret PG"); url ${url}`, url);
    expect(msg).not.toMatch(/S3c/);
    expect(msg).toContain('postgresql://sync@/analytics');
    expect(scrub(`login S3cretPG refused for ${SOCKET}`, SOCKET)).toBe('login *** refused for postgresql://sync@/analytics');
  });
});

describe('a URL no driver can read is exit 2 naming --db', () => {
  it('checkPgUrl and PgDatabase.open refuse it before connecting, without the password', async () => {
    for (const url of ['postgres://u:S3cretPG@h:99999/db', 'postgres://[::1:1/db', 'postgres://u@h:99999/db?password=S3cretPG']) {
      expect(() => checkPgUrl(url)).toThrow(UsageError);
      const err = await PgDatabase.open(url, 'campaign_sync').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect(exitCodeFor(err)).toBe(2);
      expect((err as Error).message).toMatch(/^--db: postgres:\/\/.* is not a valid PostgreSQL URL/);
      expect((err as Error).message).not.toContain('S3cretPG');
    }
    expect(() => checkPgUrl(SOCKET)).not.toThrow();
    expect(() => checkPgUrl('postgres://u:pw@127.0.0.1:5432/db')).not.toThrow();
  });

  it('pull: the socket form that fails is 74 without its password; a malformed URL is 2 naming --db', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const socket = 'postgresql://sync@/analytics?host=/nonexistent-campaign-sync&password=S3cretPG';
    const down = await cli(['pull', '--db', socket, '--base-url', s.url], env);
    expect(down.code).toBe(74);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toContain('postgresql://sync@/analytics');
    expect(down.stdout + down.stderr).not.toContain('S3cretPG');
    for (const url of ['postgres://u:S3cretPG@h:99999/db', 'postgres://[::1:1/db']) {
      const bad = await cli(['pull', '--db', url, '--base-url', s.url], env);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^campaign-sync: --db: /);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      expect(bad.stdout + bad.stderr).not.toContain('S3cretPG');
    }
  });
});

/** A loopback port nothing listens on: a connection to it is refused at once. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The commands that open a PostgreSQL --db, with what each needs besides it (nothing is ever asked of the API). */
const OPENERS = [['pull'], ['status'], ['export', '--table', 'campaigns'], ['reset', '--all'], ['forget', '--user', 'a@example.com']];
const API = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' };

describe('a PostgreSQL URL from CAMPAIGN_SYNC_DB or a profile is named by where it came from, not --db', () => {
  it('CAMPAIGN_SYNC_DB: a malformed URL is exit 2, a refused connection exit 74, each naming the variable, never the password', async () => {
    const bad = await cli(['status'], { env: { CAMPAIGN_SYNC_DB: 'postgres://u:S3cretPG@h:99999/db' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^campaign-sync: CAMPAIGN_SYNC_DB: postgres:\/\/h:99999\/db is not a valid PostgreSQL URL/);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).not.toContain('--db');
    expect(bad.stdout + bad.stderr).not.toContain('S3cretPG');
    const port = await closedPort();
    const url = `postgres://u:S3cretPG@127.0.0.1:${port}/db`;
    const runs = await Promise.all(OPENERS.map((args) => cli(args, { env: { ...API, CAMPAIGN_SYNC_DB: url } })));
    for (const [i, r] of runs.entries()) {
      const args = OPENERS[i] as string[];
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(74);
      expect(r.stderr, args[0]).toMatch(
        new RegExp(`^campaign-sync: CAMPAIGN_SYNC_DB: cannot open postgres://u@127\\.0\\.0\\.1:${port}/db \\(schema campaign_sync\\): `),
      );
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).not.toContain('--db');
      expect(r.stdout + r.stderr).not.toContain('S3cretPG');
    }
  });

  it("a profile's db: named by the config file, the profile and the key", async () => {
    const dir = tempDir();
    const port = await closedPort();
    const config = join(dir, 'campaign-sync.toml');
    const profile = (db: string) =>
      writeFileSync(config, `[profiles.team]\nbase_url = "http://127.0.0.1:9"\ndb = "${db}"\n`, { mode: 0o600 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: 'k', CAMPAIGN_SYNC_PROFILE: 'team' }, cwd: dir };
    profile('postgres://u:S3cretPG@h:99999/db');
    const bad = await cli(['status'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `campaign-sync: ${config}: profiles.team.db: postgres://h:99999/db is not a valid PostgreSQL URL (postgres://user@host:port/database, a port from 1 to 65535, an IPv6 host in [ ])\n`,
    );
    profile(`postgres://u:S3cretPG@127.0.0.1:${port}/db`);
    const runs = await Promise.all(OPENERS.map((args) => cli(args, env)));
    for (const [i, r] of runs.entries()) {
      const args = OPENERS[i] as string[];
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(74);
      expect(
        r.stderr.startsWith(
          `campaign-sync: ${config}: profiles.team.db: cannot open postgres://u@127.0.0.1:${port}/db (schema campaign_sync): `,
        ),
        r.stderr,
      ).toBe(true);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout + r.stderr).not.toContain('S3cretPG');
    }
  });
});
