/**
 * No file campaign-sync creates or writes is reached through a symbolic link at its own name. A link
 * is planted (by another user of a shared folder, say) at each such name, pointing to a file of known
 * bytes and mode 0644 in another folder, or to nothing; the command that would write there exits 2
 * with one line naming the link, the file pointed to keeps its bytes and mode, and a dangling link's
 * target is never created.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openPrivateFile, writePrivateFile } from '../../../../src/core/fs/private-file.js';
import type { RunningSimulator } from '../../../../src/simulator/server.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { openSqlite, prepareSqliteFile } from '../../../../src/store/sqlite/private-db.js';
import { type CliResult, tempDir } from '../../../helpers/index.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

const BYTES = 'precious: not campaign-sync data\n';

/** A file of someone's, in a folder of its own: the target of a planted link. */
function victim(): string {
  const path = join(tempDir(), 'victim.txt');
  writeFileSync(path, BYTES);
  chmodSync(path, 0o644);
  return path;
}

/** The victim is as it was: same bytes, same mode. */
function untouched(path: string): void {
  expect(readFileSync(path, 'utf8')).toBe(BYTES);
  expect(statSync(path).mode & 0o777).toBe(0o644);
}

let s: RunningSimulator;
/** A mirror pulled once, copied into each case's folder. */
let template: string;
let someEmail: string;

beforeAll(async () => {
  s = await sharedSim({ campaigns: 2, records: 5 });
  template = join(tempDir(), 'm.db');
  const r = await runCli(['pull', '--db', template], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code, r.stderr).toBe(0);
  const db = openDatabase(template, { mustExist: true, readonly: true });
  someEmail = db.prepare('SELECT user_email FROM session_results WHERE user_email IS NOT NULL LIMIT 1').pluck().get() as string;
  db.close();
});

/** One case's world: its folder (real path: the lock files are named by it), database, --out and state folder. */
interface World {
  dir: string;
  db: string;
  out: string;
  state: string;
  ledger: string;
  run(args: string[]): Promise<CliResult>;
}

function world(): World {
  const dir = realpathSync(tempDir());
  const state = join(dir, 'state');
  const w: World = {
    dir,
    db: join(dir, 'm.db'),
    out: join(dir, 'out'),
    state,
    ledger: join(state, 'campaign-sync', 'budget-slots.db'),
    run: (args) =>
      runCli(args, { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, XDG_STATE_HOME: state }, cwd: dir }),
  };
  mkdirSync(join(state, 'campaign-sync'), { recursive: true });
  return w;
}

/** Copies the pulled mirror in as `w.db`. */
function withMirror(w: World): void {
  copyFileSync(template, w.db);
  chmodSync(w.db, 0o600);
}

/** A mirror that feeds `w.out` with NDJSON, written by a pull. */
async function withNdjsonMirror(w: World): Promise<void> {
  const r = await w.run(['pull', '--db', w.db, '--format', 'ndjson', '--out', w.out]);
  expect(r.code, r.stderr).toBe(0);
}

const pull = (w: World) => w.run(['pull', '--db', w.db]);
const pullNdjson = (w: World) => {
  mkdirSync(w.out, { recursive: true });
  return w.run(['pull', '--db', w.db, '--format', 'ndjson', '--out', w.out]);
};

interface Case {
  /** Where the link is planted. */
  at: (w: World) => string;
  /** Gets the world ready before the link is planted. */
  before?: (w: World) => void | Promise<void>;
  run: (w: World) => Promise<CliResult>;
}

const cases: Record<string, Case> = {
  // The run lock and its info file, beside the database: every command that takes the lock.
  '<db>.lock, pull': { at: (w) => `${w.db}.lock`, run: pull },
  '<db>.lock, watch': { at: (w) => `${w.db}.lock`, run: (w) => w.run(['watch', '--db', w.db, '--max-cycles', '1']) },
  '<db>.lock, reset': { at: (w) => `${w.db}.lock`, before: withMirror, run: (w) => w.run(['reset', '--all', '--db', w.db]) },
  '<db>.lock, forget': { at: (w) => `${w.db}.lock`, before: withMirror, run: (w) => w.run(['forget', '--user', someEmail, '--db', w.db]) },
  '<db>.lock, reconcile': { at: (w) => `${w.db}.lock`, before: withMirror, run: (w) => w.run(['reconcile', '--db', w.db]) },
  '<db>.lock-journal, pull': { at: (w) => `${w.db}.lock-journal`, run: pull },
  '<db>.lock.info, pull': { at: (w) => `${w.db}.lock.info`, run: pull },
  '<db>.lock.info, watch': { at: (w) => `${w.db}.lock.info`, run: (w) => w.run(['watch', '--db', w.db, '--max-cycles', '1']) },
  '<db>.lock.info, reset': { at: (w) => `${w.db}.lock.info`, before: withMirror, run: (w) => w.run(['reset', '--all', '--db', w.db]) },
  '<db>.lock.info, forget': {
    at: (w) => `${w.db}.lock.info`,
    before: withMirror,
    run: (w) => w.run(['forget', '--user', someEmail, '--db', w.db]),
  },
  '<db>.lock.info, reconcile': { at: (w) => `${w.db}.lock.info`, before: withMirror, run: (w) => w.run(['reconcile', '--db', w.db]) },
  // The database and the files SQLite keeps beside it.
  '<db>, pull (a new mirror)': { at: (w) => w.db, run: pull },
  '<db>, status': { at: (w) => w.db, run: (w) => w.run(['status', '--db', w.db]) },
  '<db>, export': { at: (w) => w.db, run: (w) => w.run(['export', '--db', w.db, '--table', 'campaigns']) },
  '<db>-wal, pull': { at: (w) => `${w.db}-wal`, before: withMirror, run: pull },
  '<db>-shm, reset': { at: (w) => `${w.db}-shm`, before: withMirror, run: (w) => w.run(['reset', '--all', '--db', w.db]) },
  '<db>-journal, pull (a new mirror)': { at: (w) => `${w.db}-journal`, run: pull },
  '<db>-shm, status': { at: (w) => `${w.db}-shm`, before: withMirror, run: (w) => w.run(['status', '--db', w.db]) },
  // The NDJSON folder: its lock, its info file, its files.
  '<out>/.campaign-sync.lock': { at: (w) => join(w.out, '.campaign-sync.lock'), run: pullNdjson },
  '<out>/.campaign-sync.lock-journal': { at: (w) => join(w.out, '.campaign-sync.lock-journal'), run: pullNdjson },
  '<out>/.campaign-sync.lock.info': { at: (w) => join(w.out, '.campaign-sync.lock.info'), run: pullNdjson },
  '<out>/campaigns.ndjson': { at: (w) => join(w.out, 'campaigns.ndjson'), run: pullNdjson },
  '<out>/session_results.ndjson': { at: (w) => join(w.out, 'session_results.ndjson'), run: pullNdjson },
  '<out>/role_results.ndjson': { at: (w) => join(w.out, 'role_results.ndjson'), run: pullNdjson },
  '<out>/session_results.ndjson (written before), forget': {
    at: (w) => join(w.out, 'session_results.ndjson'),
    before: withNdjsonMirror,
    run: (w) => w.run(['forget', '--user', someEmail, '--db', w.db]),
  },
  // The request budget's slots in the state folder, and what SQLite keeps beside them.
  'budget-slots.db': { at: (w) => w.ledger, run: pull },
  'budget-slots.db-wal': { at: (w) => `${w.ledger}-wal`, run: pull },
  'budget-slots.db-shm': { at: (w) => `${w.ledger}-shm`, run: pull },
  'budget-slots.db-journal': { at: (w) => `${w.ledger}-journal`, run: pull },
  // export -o.
  'export -o, csv': {
    at: (w) => join(w.dir, 'out.csv'),
    before: withMirror,
    run: (w) => w.run(['export', '--db', w.db, '--table', 'campaigns', '-o', 'out.csv']),
  },
  'export -o, ndjson': {
    at: (w) => join(w.dir, 'out.ndjson'),
    before: withMirror,
    run: (w) => w.run(['export', '--db', w.db, '--table', 'session-results', '--format', 'ndjson', '-o', join(w.dir, 'out.ndjson')]),
  },
};

/** The one line a planted link draws: naming it as the command named it (relative when given so). */
function refusal(w: World, at: string): RegExp {
  const named = [at, at.slice(w.dir.length + 1)].map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return new RegExp(
    `^campaign-sync: (${named}) is a symbolic link; campaign-sync does not follow links to its own files \\([^\\n]*\\)\\n$`,
  );
}

describe('a symbolic link planted where campaign-sync writes is refused: exit 2, naming it, its target untouched', () => {
  it.each(Object.entries(cases))('%s', async (_, c) => {
    for (const dangling of [false, true]) {
      const w = world();
      await c.before?.(w);
      const at = c.at(w);
      mkdirSync(join(at, '..'), { recursive: true });
      rmSync(at, { force: true });
      const target = dangling ? join(tempDir(), 'nothing-here') : victim();
      symlinkSync(target, at);
      const r = await c.run(w);
      const what = `${dangling ? 'dangling' : 'link'}: ${r.stderr}`;
      expect(r.stderr, what).toMatch(refusal(w, at));
      expect(r.code, what).toBe(2);
      expect(lstatSync(at).isSymbolicLink(), what).toBe(true);
      if (dangling) expect(existsSync(target), what).toBe(false);
      else untouched(target);
    }
  });
});

describe('the one way files are opened for writing refuses a link at the name', () => {
  const attempts: Record<string, (path: string) => unknown> = {
    'a new file (export and erasure temporaries, kept WAL copies)': (p) => openPrivateFile(p, { exclusive: true }),
    'a file created or reused (NDJSON, the ledger)': (p) => openPrivateFile(p, { read: true }),
    'a file written whole (lock info)': (p) => writePrivateFile(p, 'x'),
    'an SQLite file of ours (database, lock)': (p) => prepareSqliteFile(p),
    'the metrics file (created with the umask)': (p) => openPrivateFile(p, { exclusive: true, mode: 'umask' }),
  };
  it.each(Object.entries(attempts))('%s', (_, attempt) => {
    for (const dangling of [false, true]) {
      const at = join(tempDir(), 'name');
      const target = dangling ? join(tempDir(), 'nothing-here') : victim();
      symlinkSync(target, at);
      expect(() => attempt(at)).toThrow(`${at} is a symbolic link; campaign-sync does not follow links to its own files`);
      if (dangling) expect(existsSync(target)).toBe(false);
      else untouched(target);
    }
  });

  it('a link put at an SQLite file after the checks: the name SQLite resolved gives it away before any page is read', () => {
    const at = join(tempDir(), 'm.db');
    const target = victim();
    symlinkSync(target, at);
    expect(() => openSqlite(at, { fileMustExist: true })).toThrow(`${at} is a symbolic link`);
    untouched(target);
    // Dangling: never created (the file is created before, by openPrivateFile, and opened as existing).
    const nowhere = join(tempDir(), 'nothing-here');
    const dangling = join(tempDir(), 'm.db');
    symlinkSync(nowhere, dangling);
    expect(() => openSqlite(dangling, { fileMustExist: true })).toThrow();
    expect(existsSync(nowhere)).toBe(false);
  });

  it('a folder on the way may be a link: the files behind it are written, 0600', () => {
    const real = tempDir();
    const link = join(tempDir(), 'drop');
    symlinkSync(real, link);
    writePrivateFile(join(link, 'info'), 'ok\n');
    prepareSqliteFile(join(link, 'x.lock'));
    expect(readFileSync(join(real, 'info'), 'utf8')).toBe('ok\n');
    for (const f of ['info', 'x.lock']) expect(statSync(join(real, f)).mode & 0o777).toBe(0o600);
  });
});
