/**
 * An erasure stopped between two NDJSON files (kill -9 before or after a rename, a full disk) is
 * finished by the next pull before it syncs: the candidate is in no byte of any file afterwards.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { BIN, cli, sim, tempDir } from '../../../helpers/index.js';
import { mountTmpfs } from '../../../helpers/mounts.js';
import { needs } from '../../../helpers/tools.js';

const dist = (path: string) => JSON.stringify(fileURLToPath(new URL(`../../../../dist/store/${path}`, import.meta.url)));

async function run(s: RunningSimulator, args: string[]) {
  return cli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url } });
}

type User = { id: string; email: string };

/** An NDJSON mirror in `dir`, and a candidate with lines in both results files (two rewrites, two renames). */
/** Records per campaign: enough that half the role file outweighs what the erasure's transaction writes to the database. */
const RECORDS = 60;

async function mirror(dir: string) {
  const s = await sim({ campaigns: 2, records: RECORDS });
  const db = join(dir, 'm.db');
  const out = join(dir, 'out');
  const pulled = await run(s, ['pull', '--db', db, '--format', 'ndjson', '--out', out]);
  expect(pulled.code, pulled.stderr).toBe(0);
  const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
  const inRole = new Set(Array.from({ length: RECORDS }, (_, i) => (s.data.roleResult(role, i, 'DETAILED').user as User).id));
  const x = Array.from({ length: RECORDS }, (_, i) => s.data.sessionResult(session, i).user as User).find((u) => inRole.has(u.id)) as User;
  expect(x).toBeDefined();
  return { s, db, out, x };
}

/** Every byte of every file under `dir` (the database, its -wal and -shm, the NDJSON files, any temporary file). */
function everyByte(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'))
    .join('\n');
}

function expectIn(dir: string, x: User, present: boolean) {
  const bytes = everyByte(dir);
  expect(bytes.includes(x.email), x.email).toBe(present);
  if (!present) expect(bytes.includes(x.id), x.id).toBe(false);
}

/** The next pull finishes the erasure before it syncs: exit 0, nothing of `x` left, nothing pending. */
async function pullFinishes(s: RunningSimulator, dir: string, db: string, x: User) {
  const next = await run(s, ['pull', '--db', db]);
  expect(next.code, next.stderr).toBe(0);
  expectIn(dir, x, false);
  const m = openDatabase(db, { readonly: true });
  expect(m.prepare("SELECT count(*) FROM meta WHERE key = 'erase_pending' OR key LIKE 'ndjson_rewrite:%'").pluck().get()).toBe(0);
  m.close();
  // The files are still the database's own: a second pull appends nothing and fails nothing.
  const again = await run(s, ['pull', '--db', db, '--json']);
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout).records).toBe(0);
}

describe('an erasure stopped between files is finished by the next pull', () => {
  for (const at of [1, 2]) {
    it(`kill -9 right after rename ${at} of 2`, async () => {
      const dir = tempDir();
      const { s, db, x } = await mirror(dir);
      const script = `
        const { openDatabase } = await import(${dist('sqlite/db.js')});
        const { eraseCandidate } = await import(${dist('sqlite/erasure.js')});
        let n = 0;
        eraseCandidate(openDatabase(process.argv[1]), process.argv[2], {
          afterRename: () => { if (++n === Number(process.argv[3])) process.kill(process.pid, 'SIGKILL'); },
        });`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, db, x.email, String(at)], { encoding: 'utf8' });
      expect(child.signal, child.stderr).toBe('SIGKILL');
      // Still somewhere: the file not renamed yet, or the rows' bytes before the rebuild.
      if (at === 1) expectIn(dir, x, true);
      await pullFinishes(s, dir, db, x);
    });
  }

  it('a failure (ENOSPC) right after the first rename: the next pull rewrites the other file', async () => {
    const dir = tempDir();
    const { s, db, x } = await mirror(dir);
    const script = `
      const { openDatabase } = await import(${dist('sqlite/db.js')});
      const { eraseCandidate } = await import(${dist('sqlite/erasure.js')});
      try {
        eraseCandidate(openDatabase(process.argv[1]), process.argv[2], {
          afterRename: () => { throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }); },
        });
      } catch (err) {
        process.exitCode = err.code === 'ENOSPC' ? 74 : 1;
      }`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, db, x.id], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(74);
    expectIn(dir, x, true);
    await pullFinishes(s, dir, db, x);
  });

  for (const at of [1, 2]) {
    it(`kill -9 as the CLI enters rename ${at} of 2 (strace)`, async (ctx) => {
      needs(ctx, 'strace');
      const dir = tempDir();
      const { s, db, x } = await mirror(dir);
      const killed = spawnSync(
        'strace',
        [
          '-f',
          '-qq',
          '-o',
          '/dev/null',
          '-e',
          'trace=rename',
          '-e',
          `inject=rename:signal=KILL:when=${at}`,
          process.execPath,
          BIN,
          'forget',
          '--db',
          db,
          '--user',
          x.email,
        ],
        { encoding: 'utf8', env: { ...process.env, CAMPAIGN_SYNC_DB: undefined, XDG_STATE_HOME: tempDir() } },
      );
      // strace ends as its tracee did: killed.
      expect(killed.signal ?? killed.status, killed.stderr).not.toBe(0);
      expect(killed.stdout).toBe('');
      // Killed at the files' renames (role_results first), not at some other rename.
      const text = (name: string) => readFileSync(join(dir, 'out', name), 'utf8');
      expect(text('role_results.ndjson').includes(x.email)).toBe(at === 1);
      expect(text('session_results.ndjson')).toContain(x.email);
      await pullFinishes(s, dir, db, x);
    });
  }

  it('a full disk (tmpfs): forget exits 74 naming the file; once space is freed the next pull finishes it', async (ctx) => {
    const dir = join(tempDir(), 'disk');
    mkdirSync(dir);
    const undo = mountTmpfs(dir, 8 * 1024);
    if (!undo) return ctx.skip();
    try {
      const { s, db, out, x } = await mirror(dir);
      const role = join(out, 'role_results.ndjson');
      // What is left free holds half the role file: its rewrite cannot.
      const fs = statfsSync(dir);
      const filler = join(dir, 'filler');
      writeFileSync(filler, Buffer.alloc(Math.max(0, fs.bavail * fs.bsize - Math.floor(statSync(role).size / 2))));
      const full = await run(s, ['forget', '--db', db, '--user', x.email]);
      expect(full.code, full.stderr).toBe(74);
      expect(full.stderr.trim().split('\n')).toHaveLength(1);
      expect(full.stderr).toContain(role);
      expect(full.stderr).not.toContain(`${db}:`);
      expect(full.stderr).not.toContain(x.email);
      expect(readdirSync(out).filter((n) => n.includes('.forget-'))).toEqual([]);
      rmSync(filler);
      await pullFinishes(s, dir, db, x);
    } finally {
      undo();
    }
  });
});
