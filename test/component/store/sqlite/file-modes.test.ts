/**
 * The modes of a mirror's files are the operator's: a new database, its -wal and -shm, NDJSON files
 * and folders are created private (0600, 0700) or, with `--file-mode group` (a profile's
 * `file_mode`), readable by the group (0640, 0750), whatever the umask; an existing one keeps the
 * mode it has (an operator's `chmod 640` for analysts lasts through pulls and erasures). One every
 * user may write, or another user's, is still refused, and left as it is.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, readFileSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkOwnFile, openPrivateFile } from '../../../../src/core/fs/private-file.js';
import { tempDir } from '../../../helpers/index.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';
import { hasProgram, needs } from '../../../helpers/tools.js';

/** nobody and nogroup (65534 on Debian and most Linux): a user who is not this test's. */
const NOBODY = 65534;

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

const NDJSON = ['campaigns.ndjson', 'session_results.ndjson', 'role_results.ndjson', '_manifest.ndjson'];

let saved: number | undefined;
afterEach(() => {
  if (saved !== undefined) process.umask(saved);
  saved = undefined;
  vi.restoreAllMocks();
});

async function env() {
  const s = await sharedSim({ campaigns: 2, records: 20 });
  return { s, env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } };
}

describe('an existing mirror keeps the mode its operator gave it', () => {
  it('chmod 640 on the database, its -wal and -shm survives a pull, a status and another pull', async () => {
    const { env: e } = await env();
    const db = join(tempDir(), 'm.db');
    const first = await runCli(['pull', '--db', db, '--quiet'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    const files = [db, `${db}-wal`, `${db}-shm`];
    for (const f of files) expect(modeOf(f), f).toBe('600');
    for (const f of files) chmodSync(f, 0o640);
    for (const args of [['pull'], ['status'], ['pull', '--full']]) {
      const r = await runCli([...args, '--db', db, '--quiet'], { env: e });
      expect(r.code, r.stderr).toBe(0);
      for (const f of files) expect(modeOf(f), `${f} after ${args.join(' ')}`).toBe('640');
    }
  });

  it('chmod 640 on the NDJSON files and 750 on their folder survive a pull, and a forget that rewrites a file', async () => {
    const { s, env: e } = await env();
    const dir = tempDir();
    const out = join(dir, 'out');
    const db = join(dir, 'state.db');
    const pull = () => runCli(['pull', '--db', db, '--format', 'ndjson', '--out', out, '--quiet'], { env: e });
    expect((await pull()).code).toBe(0);
    expect(modeOf(out)).toBe('700');
    for (const f of NDJSON) expect(modeOf(join(out, f)), f).toBe('600');
    chmodSync(out, 0o750);
    for (const f of NDJSON) chmodSync(join(out, f), 0o640);
    const again = await runCli(['pull', '--db', db, '--format', 'ndjson', '--out', out, '--full', '--quiet'], { env: e });
    expect(again.code, again.stderr).toBe(0);
    expect(modeOf(out)).toBe('750');
    for (const f of NDJSON) expect(modeOf(join(out, f)), f).toBe('640');

    // forget rewrites the file into a new one renamed over it: the new one takes the old one's mode.
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    const email = (s.data.sessionResult(session as NonNullable<typeof session>, 3).user as { email: string }).email;
    const file = join(out, 'session_results.ndjson');
    expect(readFileSync(file, 'utf8')).toContain(email);
    // The analysts' group too, where this process may give it (root may; a user its own groups).
    const asRoot = process.getuid?.() === 0;
    if (asRoot) chownSync(file, 0, 4242);
    const forget = await runCli(['forget', '--db', db, '--user', email, '--quiet'], {});
    expect(forget.code, forget.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toContain(email);
    expect(modeOf(file)).toBe('640');
    if (asRoot) expect(statSync(file).gid).toBe(4242);
  });

  it('a database every user may write, or an NDJSON file, is refused (74) naming it, and left as it is', async () => {
    const { env: e } = await env();
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db, '--quiet'], { env: e })).code).toBe(0);
    chmodSync(db, 0o666);
    const r = await runCli(['pull', '--db', db, '--quiet'], { env: e });
    expect(r.code).toBe(74);
    expect(r.stderr).toBe(
      `campaign-sync: ${db} may be written by every user (mode 0666); campaign-sync leaves the mode of an existing file as it is, and writes no file anybody may change: chmod o-w it and run again\n`,
    );
    expect(modeOf(db)).toBe('666');
    chmodSync(db, 0o660);
    const fixed = await runCli(['pull', '--db', db, '--quiet'], { env: e });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(modeOf(db)).toBe('660');

    const out = join(dir, 'out');
    const ndjson = ['pull', '--db', join(dir, 'state.db'), '--out', out, '--quiet'];
    expect((await runCli(ndjson, { env: e })).code).toBe(0);
    chmodSync(join(out, 'role_results.ndjson'), 0o646);
    const refused = await runCli(ndjson, { env: e });
    expect(refused.code).toBe(74);
    expect(refused.stderr).toMatch(/role_results\.ndjson may be written by every user \(mode 0646\)/);
    expect(modeOf(join(out, 'role_results.ndjson'))).toBe('646');
  });

  it("another user's file is refused unless this process is root", () => {
    const path = join(tempDir(), 'f');
    writeFileSync(path, 'x', { mode: 0o600 });
    const theirs: Stats = Object.assign(statSync(path), { uid: 4242, mode: 0o100600 });
    vi.spyOn(process, 'getuid').mockReturnValue(1000);
    expect(() => checkOwnFile(theirs, path)).toThrow(
      `${path} belongs to another user (uid 4242); campaign-sync writes only files of the user it runs as: run it as that user, or chown the file`,
    );
    vi.spyOn(process, 'getuid').mockReturnValue(0);
    expect(() => checkOwnFile(theirs, path)).not.toThrow();
  });
});

describe('--file-mode group: new files 0640 and folders 0750, whatever the umask', () => {
  it('a SQLite mirror and an NDJSON folder made under umask 077; the lock files stay private', async () => {
    const { env: e } = await env();
    saved = process.umask(0o077);
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const r = await runCli(['pull', '--db', db, '--file-mode', 'group', '--quiet'], { env: e });
    expect(r.code, r.stderr).toBe(0);
    for (const f of [db, `${db}-wal`, `${db}-shm`]) expect(modeOf(f), f).toBe('640');
    expect(modeOf(`${db}.lock`)).toBe('600');

    const out = join(dir, 'drop', 'campaign-sync');
    const state = join(dir, 'state.db');
    const nd = await runCli(['pull', '--db', state, '--out', out, '--file-mode', 'GROUP', '--quiet'], { env: e });
    expect(nd.code, nd.stderr).toBe(0);
    for (const folder of [join(dir, 'drop'), out]) expect(modeOf(folder), folder).toBe('750');
    for (const f of NDJSON) expect(modeOf(join(out, f)), f).toBe('640');
    for (const f of [state, `${state}-wal`, `${state}-shm`]) expect(modeOf(f), f).toBe('640');
    expect(modeOf(join(out, '.campaign-sync.lock'))).toBe('600');
  });

  it('an analyst of the group runs sqlite3 on the mirror a service user pulled (as root: a real other user)', async (ctx) => {
    needs(ctx, 'sqlite3');
    const { env: e } = await env();
    saved = process.umask(0o077);
    const dir = tempDir();
    const srv = join(dir, 'srv');
    mkdirSync(srv);
    chmodSync(dir, 0o711);
    // The recipe: a folder whose group (setgid) every file made in it gets; nobody is in that group.
    const asNobody = process.getuid?.() === 0 && hasProgram('setpriv');
    if (asNobody) {
      chownSync(srv, 0, NOBODY);
      chmodSync(srv, 0o2750);
    }
    const db = join(srv, 'mirror.db');
    const r = await runCli(['pull', '--db', db, '--file-mode', 'group', '--quiet'], { env: e });
    expect(r.code, r.stderr).toBe(0);
    for (const f of [db, `${db}-wal`, `${db}-shm`]) expect(modeOf(f), f).toBe('640');
    if (!asNobody) return;
    const as = (...command: string[]) =>
      spawnSync('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--init-groups', ...command], { encoding: 'utf8' });
    const analyst = as('sqlite3', db, 'SELECT count(*) FROM results');
    expect(analyst.stderr).toBe('');
    expect(Number(analyst.stdout.trim())).toBeGreaterThan(0);
    // The lock file is the service's alone.
    expect(as('cat', `${db}.lock`).status).not.toBe(0);
  });

  it("a profile's file_mode, and campaigns, which creates the mirror too; an existing file keeps its mode", async () => {
    const { env: e } = await env();
    saved = process.umask(0o022);
    const dir = tempDir();
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, '[profiles.shared]\nfile_mode = "group"\n', { mode: 0o600 });
    const db = join(dir, 'm.db');
    const r = await runCli(['campaigns', '--db', db, '--config', config, '--profile', 'shared', '--quiet'], { env: e });
    expect(r.code, r.stderr).toBe(0);
    expect(modeOf(db)).toBe('640');
    chmodSync(db, 0o600);
    const pulled = await runCli(['pull', '--db', db, '--config', config, '--profile', 'shared', '--quiet'], { env: e });
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(modeOf(db)).toBe('600');
  });

  it('a bad value is exit 2 naming where it came from', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const flag = await runCli(['pull', '--db', db, '--file-mode', 'public', '--base-url', 'http://127.0.0.1:9'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--file-mode.*'public'.*private, group/);
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, '[profiles.x]\nfile_mode = "0644"\n', { mode: 0o600 });
    const profile = await runCli(['pull', '--db', db, '--config', config, '--profile', 'x', '--base-url', 'http://127.0.0.1:9'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(profile.code).toBe(2);
    expect(profile.stderr).toBe(`campaign-sync: ${config}: profiles.x.file_mode: must be private or group\n`);
    expect(existsSync(db)).toBe(false);
  });

  it('the one way files are created: the mode asked for, whatever the umask; an existing file as it is', () => {
    saved = process.umask(0o077);
    const dir = tempDir();
    const fresh = join(dir, 'fresh');
    closeSync(openPrivateFile(fresh, { read: true, mode: 0o640 }));
    expect(modeOf(fresh)).toBe('640');
    chmodSync(fresh, 0o604);
    closeSync(openPrivateFile(fresh, { read: true, mode: 0o640 }));
    expect(modeOf(fresh)).toBe('604');
    // The metrics file: 0644 less the umask, as any program's file.
    process.umask(0o027);
    const plain = join(dir, 'plain.prom');
    closeSync(openPrivateFile(plain, { exclusive: true, mode: 'umask' }));
    expect(modeOf(plain)).toBe('640');
  });
});
