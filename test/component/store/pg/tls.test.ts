/**
 * A PostgreSQL host off this machine is reached over TLS, or in plaintext only when the URL says
 * sslmode=disable (core/pg-url.ts). Refusals come before any connection: the tests that name a host
 * off this machine make every socket connection of the process throw, so nothing leaves it even if
 * the rule were broken. Then against a real server with a self-signed certificate made by openssl: the
 * tests cannot reach a host off loopback, so the rule is pointed at 127.0.0.1 through the run's
 * `offLoopback` seam (core/io.ts: tests only, it can only refuse more), which takes that address for
 * another machine. The server logs every connection it receives and whether it was encrypted.
 */

import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { processIo, withIo } from '../../../../src/core/io.js';
import { exitCodeFor, UsageError } from '../../../../src/errors.js';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { tempDir } from '../../../helpers/index.js';
import { describePg } from '../../../helpers/pg.js';
import { startPgServer, TEST_PG_PASSWORD, type TestPgServer } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';
import { selfSigned } from '../../../helpers/tls.js';
import { describeWith } from '../../../helpers/tools.js';

const WHAT_TO_DO =
  'add sslmode=verify-full (or require, verify-ca) to the URL, or sslmode=disable to send it in plaintext on a network you trust';

/** The refusal's line on stderr. */
const refused = (where: string, host: string, why: string) =>
  `campaign-sync: ${where}: PostgreSQL at ${host} is not on this machine and the connection would not be encrypted (${why}); ${WHAT_TO_DO}\n`;

describe('plaintext off this machine is refused before any connection (exit 2, one line)', () => {
  let connects: MockInstance;
  beforeEach(() => {
    // Fails the attempt at once, as a refused connection would: nothing leaves the process.
    connects = vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket) {
      process.nextTick(() => this.destroy(new Error('a connection was attempted')));
      return this;
    });
  });
  afterEach(() => connects.mockRestore());

  it.each([
    [['status', '--db', 'postgres://sync@db.example.com/analytics'], {}, refused('--db', 'host db.example.com', 'nothing asks for TLS')],
    [
      ['export', '--table', 'campaigns', '--format', 'csv'],
      { CAMPAIGN_SYNC_DB: 'postgresql://sync@/analytics?host=10.0.0.5&sslmode=prefer' },
      refused('CAMPAIGN_SYNC_DB', 'host 10.0.0.5', 'sslmode=prefer lets the connection fall back to plaintext'),
    ],
    [
      ['pull'],
      { CAMPAIGN_SYNC_DB: 'postgres://sync@/analytics', PGHOST: 'db.example.com' },
      refused('CAMPAIGN_SYNC_DB', 'PGHOST db.example.com', 'nothing asks for TLS'),
    ],
    [
      ['reset', '--all'],
      { CAMPAIGN_SYNC_DB: 'postgres://sync@[2001:db8::5]/analytics', PGSSLMODE: 'disable' },
      refused('CAMPAIGN_SYNC_DB', 'host 2001:db8::5', 'PGSSLMODE=disable does not encrypt it, and only the URL may say sslmode=disable'),
    ],
    [
      ['forget', '--user', 'a@example.com', '--db', 'postgres://sync@db.example.com/analytics?ssl=0'],
      {},
      refused('--db', 'host db.example.com', 'the URL does not ask for TLS with an sslmode'),
    ],
  ])('%o %o', async (args, env, line) => {
    const r = await runCli(args, { env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k', ...env } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(line);
    expect(connects).not.toHaveBeenCalled();
  });

  it("a profile's db: named by the config file and key", async () => {
    const dir = tempDir();
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, '[profiles.team]\ndb = "postgres://sync@db.example.com/analytics"\n', { mode: 0o600 });
    const r = await runCli(['status', '--config', config, '--profile', 'team']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(refused(`${config}: profiles.team.db`, 'host db.example.com', 'nothing asks for TLS'));
    expect(connects).not.toHaveBeenCalled();
  });

  it('PgDatabase.open refuses it too, whoever calls it', async () => {
    const err = await PgDatabase.open('postgres://sync@db.example.com/analytics', 'campaign_sync', { where: 'CAMPAIGN_SYNC_DB' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect(exitCodeFor(err)).toBe(2);
    expect(`campaign-sync: ${(err as Error).message}\n`).toBe(refused('CAMPAIGN_SYNC_DB', 'host db.example.com', 'nothing asks for TLS'));
    expect(connects).not.toHaveBeenCalled();
  });
});

/** What the server logged from `from` on. */
const since = (server: TestPgServer, from: number) => server.log().slice(from);

/** The log lines of connections of this process (in-process runs: its pid in application_name) authorized in `text`. */
function authorized(text: string): string[] {
  const app = `application_name=campaign-sync pid ${process.pid} on ${hostname()}`.slice(0, 'application_name='.length + 63);
  return text.split('\n').filter((l) => l.includes('connection authorized:') && l.includes(app));
}

describePg('the rule against a real server with TLS (a server of this file’s own, 127.0.0.1 taken for another machine)', () => {
  describeWith('openssl', 'a self-signed certificate for 127.0.0.1', () => {
    let server: TestPgServer | undefined;
    let ca = '';
    const OFF = ['127.0.0.1'];
    beforeAll(async () => {
      const made = selfSigned(['IP:127.0.0.1']);
      ca = made.cert;
      server = await startPgServer({ ssl: made, logConnections: true });
    }, 120_000);
    afterAll(() => server?.stop());

    const url = (query: string) => `${(server as TestPgServer).url}${query}`;
    const pull = async (db: string, schema: string, env: Record<string, string> = {}) => {
      const s = await sharedSim({ campaigns: 2, records: 30 });
      return runCli(['pull', '--pg-schema', schema], {
        env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: db, ...env },
        offLoopback: OFF,
      });
    };

    it('sslmode=require: every connection is encrypted (pg_stat_ssl, the server’s log) and the pull completes', async () => {
      const db = url(`?sslmode=require&sslrootcert=${encodeURIComponent(ca)}`);
      const mirror = await withIo({ ...processIo(), offLoopback: OFF }, () => PgDatabase.open(db, 'tls_require'));
      try {
        const row = (await mirror.query('SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0];
        expect(row?.ssl).toBe(true);
        expect(row?.version).toMatch(/^TLSv1\.[23]$/);
      } finally {
        await mirror.close();
      }
      const from = (server as TestPgServer).log().length;
      const r = await pull(db, 'tls_require');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain(TEST_PG_PASSWORD);
      const lines = authorized(since(server as TestPgServer, from));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatch(/ SSL enabled \(protocol=TLSv1\.[23], /);
    });

    it('the URL silent, PGSSLMODE=no-verify: the driver is handed TLS from the run’s environment', async () => {
      const from = (server as TestPgServer).log().length;
      const r = await pull(url(''), 'tls_env', { PGSSLMODE: 'no-verify' });
      expect(r.code, r.stderr).toBe(0);
      const lines = authorized(since(server as TestPgServer, from));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatch(/ SSL enabled /);
    });

    it('no sslmode: exit 2 and one line, and the server saw no connection at all', async () => {
      const from = (server as TestPgServer).log().length;
      for (const [db, env] of [
        [url(''), {}],
        [url('?sslmode=prefer'), {}],
        [url(''), { PGSSLMODE: 'disable' }],
      ] as const) {
        const r = await pull(db, 'tls_plain', env);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(
          /^campaign-sync: CAMPAIGN_SYNC_DB: PostgreSQL at host 127\.0\.0\.1 is not on this machine and the connection would not be encrypted \(/,
        );
        expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      }
      expect(since(server as TestPgServer, from)).not.toContain('connection received');
    });

    it('sslmode=disable in the URL: obeyed in plaintext, with one warning on stderr (none with --quiet)', async () => {
      const from = (server as TestPgServer).log().length;
      const db = url('?sslmode=disable');
      const r = await pull(db, 'tls_disable');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe(
        "warning: CAMPAIGN_SYNC_DB: sslmode=disable: the connection to host 127.0.0.1 is not encrypted, so the password and every candidate's e-mail cross the network readable; use sslmode=verify-full (or require) once the server has a certificate\n",
      );
      const lines = authorized(since(server as TestPgServer, from));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toContain('SSL enabled');
      const s = await sharedSim({ campaigns: 2, records: 30 });
      const quiet = await runCli(['pull', '--pg-schema', 'tls_disable', '--quiet'], {
        env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: db },
        offLoopback: OFF,
      });
      expect(quiet.code, quiet.stderr).toBe(0);
      expect(quiet.stderr).toBe('');
    });
  });
});
