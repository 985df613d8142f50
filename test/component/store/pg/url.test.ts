/**
 * PostgreSQL URLs in messages: the password never shows, in the URL's user part or in a `password=`
 * query parameter, whatever the form (the Unix-socket form `user@/db?host=…` included); a URL no
 * driver can read is a usage error naming --db (exit 2), not a storage failure (74). Errors name where
 * the URL came from (--db, CAMPAIGN_SYNC_DB, a profile's key), and a password where other users can
 * read it (the command line, a config file others may read) is used with one warning.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor, UsageError } from '../../../../src/errors.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { checkPgUrl, redactUrl, withoutSecrets } from '../../../../src/store/pg/url.js';
import { tempDir } from '../../../helpers/index.js';
import { runCli as cli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

/** What a password in --db (visible in `ps`) is warned with, before anything else is said. */
const ARGV_WARNING =
  'warning: --db: the URL holds a password, which every local user can read in the process list (ps); give the password in PGPASSWORD or ~/.pgpass, or the whole URL in CAMPAIGN_SYNC_DB or a 0600 config profile';

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
    const msg = withoutSecrets(`password authentication failed (tried "S3c/ret PG"); url ${url}`, url);
    expect(msg).not.toMatch(/S3c/);
    expect(msg).toContain('postgresql://sync@/analytics');
    expect(withoutSecrets(`login S3cretPG refused for ${SOCKET}`, SOCKET)).toBe('login *** refused for postgresql://sync@/analytics');
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
    const s = await sharedSim({ campaigns: 1, records: 1 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const socket = 'postgresql://sync@/analytics?host=/nonexistent-campaign-sync&password=S3cretPG';
    const down = await cli(['pull', '--db', socket, '--base-url', s.url], env);
    expect(down.code).toBe(74);
    // The password on the command line is warned about, once, then the failure is one line.
    expect(down.stderr.trim().split('\n')).toEqual([ARGV_WARNING, expect.stringMatching(/^campaign-sync: --db: cannot open /)]);
    expect(down.stderr).toContain('postgresql://sync@/analytics');
    expect(down.stdout + down.stderr).not.toContain('S3cretPG');
    for (const url of ['postgres://u:S3cretPG@h:99999/db', 'postgres://[::1:1/db']) {
      const bad = await cli(['pull', '--db', url, '--base-url', s.url], env);
      expect(bad.code).toBe(2);
      const lines = bad.stderr.trim().split('\n');
      expect(lines.at(-1)).toMatch(/^campaign-sync: --db: /);
      expect(lines.slice(0, -1)).toEqual(url.includes('S3cretPG') ? [ARGV_WARNING] : []);
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
    const ndjson = await cli(['pull', '--format', 'ndjson'], { env: { ...API, CAMPAIGN_SYNC_DB: url } });
    expect(ndjson.code).toBe(2);
    expect(ndjson.stderr).toBe(
      'campaign-sync: --format ndjson writes files; with a postgres:// URL in CAMPAIGN_SYNC_DB the records go to PostgreSQL\n',
    );
    // --out alone means NDJSON: named as the user gave it, not as a --format never typed.
    const out = await cli(['pull', '--out', 'drop'], { env: { ...API, CAMPAIGN_SYNC_DB: url } });
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      'campaign-sync: --out (an NDJSON folder) writes files; with a postgres:// URL in CAMPAIGN_SYNC_DB the records go to PostgreSQL\n',
    );
    // From a profile: named by its key, not by a flag the user never typed.
    const dir = tempDir();
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, '[profiles.drop]\nout = "drop"\n[profiles.fmt]\nformat = "ndjson"\n', { mode: 0o600 });
    for (const [profile, said] of [
      ['drop', `${config}: profiles.drop.out (an NDJSON folder)`],
      ['fmt', `${config}: profiles.fmt.format = "ndjson"`],
    ]) {
      const r = await cli(['pull', '--config', config, '--profile', profile as string], { env: { ...API, CAMPAIGN_SYNC_DB: url } });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `campaign-sync: ${said} writes files; with a postgres:// URL in CAMPAIGN_SYNC_DB the records go to PostgreSQL\n`,
      );
    }
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
    // One at a time: an in-process run with a cwd has the process's working folder to itself.
    const runs = [];
    for (const args of OPENERS) runs.push(await cli(args, env));
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

describe('a PostgreSQL password where other users can read it is used, with one warning that never shows it', () => {
  it('--db with a password (the process list): every command warns once; CAMPAIGN_SYNC_DB, no password or --quiet: no warning', async () => {
    const port = await closedPort();
    const url = `postgres://u:S3cretPG@127.0.0.1:${port}/db`;
    const runs = await Promise.all([
      ...OPENERS.map((args) => cli([...args, '--db', url], { env: API })),
      cli(['status', '--db', `postgres://u@127.0.0.1:${port}/db?password=S3cretPG`]),
      cli(['status', '--db', url, '--quiet']),
      cli(['status', '--db', `postgres://u@127.0.0.1:${port}/db`]),
      cli(['status'], { env: { CAMPAIGN_SYNC_DB: url } }),
    ]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(74);
      expect(r.stdout + r.stderr).not.toContain('S3cretPG');
    }
    for (const r of runs.slice(0, OPENERS.length + 1)) {
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toBe(ARGV_WARNING);
      expect(lines[1]).toMatch(/^campaign-sync: --db: cannot open postgres:\/\/u@127\.0\.0\.1:\d+\/db /);
    }
    for (const r of runs.slice(OPENERS.length + 1)) {
      expect(r.stderr).not.toContain('warning');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it("a profile's db with a password in a config file group or others can read: a warning naming the file and key", async () => {
    const dir = tempDir();
    const port = await closedPort();
    const config = join(dir, 'campaign-sync.toml');
    const write = (db: string, mode: number) => {
      writeFileSync(config, `[profiles.team]\ndb = "${db}"\n`);
      chmodSync(config, mode);
    };
    const run = (...args: string[]) => cli(['status', ...args], { env: { CAMPAIGN_SYNC_PROFILE: 'team' }, cwd: dir });
    const url = `postgres://u:S3cretPG@127.0.0.1:${port}/db`;
    const warning = (mode: string) =>
      `warning: ${config}: profiles.team.db holds a password and the file is readable by others (mode ${mode}); chmod 600 it, or give the password in PGPASSWORD or ~/.pgpass`;
    const expectRun = (r: Awaited<ReturnType<typeof run>>, warned: string | undefined) => {
      expect(r.code, r.stderr).toBe(74);
      expect(r.stdout + r.stderr).not.toContain('S3cretPG');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(warned === undefined ? 1 : 2);
      if (warned !== undefined) expect(lines[0]).toBe(warned);
      expect(lines.at(-1)).toMatch(new RegExp(`^campaign-sync: ${config.replace(/[.]/g, '\\.')}: profiles\\.team\\.db: cannot open `));
    };
    write(url, 0o644);
    expectRun(await run(), warning('0644'));
    expectRun(await run('--quiet'), undefined);
    write(url, 0o640);
    expectRun(await run(), warning('0640'));
    write(url, 0o600);
    expectRun(await run(), undefined);
    // No password in the file (PGPASSWORD or ~/.pgpass hold it): nothing to warn about.
    write(`postgres://u@127.0.0.1:${port}/db`, 0o644);
    expectRun(await run(), undefined);
  });
});
