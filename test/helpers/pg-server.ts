/**
 * A throwaway PostgreSQL server for the tests: initdb into a temp folder, postgres on a
 * unix socket in that folder and on a free loopback port, password auth over TCP (so the tests see a
 * password in the URL and can check it is never printed), stopped and removed at the end of the run.
 *
 * postgres refuses to run as root, and CI runs as root: then the server runs as the `postgres` system
 * user (runuser), in a folder it owns. A developer may point the tests at a server of their own with
 * CAMPAIGN_SYNC_TEST_PG_URL instead (each test works in a schema of its own there).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPgServer {
  url: string;
  /** The server's log so far (with `logConnections`: a line per connection received and authorized). */
  log(): string;
  /** Restarts the server (`pg_ctl restart -m mode`), waiting until it accepts connections again. */
  restart(mode: 'fast' | 'immediate'): void;
  stop(): void;
}

export const TEST_PG_USER = 'campaign_sync_test';
export const TEST_PG_PASSWORD = 'pg-secret-7c1e9b';

/** Where initdb and pg_ctl are: PATH, `pg_config --bindir`, or the newest /usr/lib/postgresql/N/bin. */
export function findPgBin(): string | undefined {
  const candidates: string[] = [];
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir) candidates.push(dir);
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {}
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(join(root, v, 'bin'));
  }
  return candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** What a test's own server does beyond the run's. */
export interface PgServerOptions {
  /** TLS with this certificate and key (PEM files: test/helpers/tls.ts selfSigned); plaintext is still accepted. */
  ssl?: { cert: string; key: string };
  /** log_connections: each connection received, and each authorized with its TLS state, in `log()`. */
  logConnections?: boolean;
}

/** Starts a server; throws with the reason when it cannot (no binaries, initdb or start failed). */
export async function startPgServer(options: PgServerOptions = {}): Promise<TestPgServer> {
  const bin = findPgBin();
  if (bin === undefined) throw new Error('no PostgreSQL binaries (initdb, pg_ctl) found; install Debian `postgresql`');
  const asRoot = process.getuid?.() === 0;
  let uid: number | undefined;
  if (asRoot) uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const dir = mkdtempSync(join(tmpdir(), 'i17-pg-server-'));
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${TEST_PG_PASSWORD}\n`, { mode: 0o600 });
  if (uid !== undefined) {
    chownSync(dir, uid, uid);
    chownSync(pwfile, uid, uid);
  }
  const run = (cmd: string, args: string[]) => {
    const full = join(bin, cmd);
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', full, ...args]] : [full, args];
    return execFileSync(file, argv, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  };
  try {
    run('initdb', [
      '-D',
      data,
      '-U',
      TEST_PG_USER,
      `--pwfile=${pwfile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(err as { stderr?: string }).stderr ?? String(err)}`);
  }
  let extra = options.logConnections ? ' -c log_connections=on' : '';
  if (options.ssl !== undefined) {
    // The server reads its key only when the server's user owns it and nobody else may read it.
    const cert = join(dir, 'server.crt');
    const key = join(dir, 'server.key');
    copyFileSync(options.ssl.cert, cert);
    copyFileSync(options.ssl.key, key);
    chmodSync(key, 0o600);
    if (uid !== undefined) {
      chownSync(cert, uid, uid);
      chownSync(key, uid, uid);
    }
    extra += ` -c ssl=on -c ssl_cert_file=${cert} -c ssl_key_file=${key}`;
  }
  // A loopback port may be taken between freePort and the start: a few tries.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    // fsync off: the tests kill clients and restart the server, never the machine, so what reaches the
    // disk is not what they test.
    const opts = `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200${extra}`;
    try {
      run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o', opts, 'start']);
    } catch (err) {
      if (attempt < 3) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pg_ctl start failed: ${(err as { stderr?: string }).stderr ?? String(err)}`);
    }
    const url = `postgres://${TEST_PG_USER}:${TEST_PG_PASSWORD}@127.0.0.1:${port}/postgres`;
    return {
      url,
      log: () => readFileSync(join(dir, 'log'), 'utf8'),
      restart(mode) {
        run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-m', mode, '-w', '-t', '60', '-o', opts, 'restart']);
      },
      stop() {
        try {
          run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  }
}
