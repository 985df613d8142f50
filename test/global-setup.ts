/**
 * Builds dist/ before any test runs, as `npm run build` does: tsc's modules (benches and a few
 * tests import them) and the bundle (scripts/bundle.js) that bin/campaign-sync.js runs, which the e2e
 * tests spawn, so a run against a stale build would test old code. Also makes `npx vitest` enough.
 *
 * A full tsc takes 12-15 s of CPU, so a build is skipped when it cannot change anything: after each
 * build, dist/.test-build.json records a hash of every input (src/, the tsconfigs, package.json, the
 * lock files, scripts/bundle.js) and of every file the build left in dist/. The next run skips the
 * build only when both still match: an edit to src/ (or a dependency) rebuilds, and so does a dist/
 * that anything else changed or removed (`npm run build` of other sources, a deleted file). When the
 * inputs changed but dist/ is exactly what the last build left, tsc runs incrementally (its
 * dist/.tsbuildinfo, 5-6 s instead of 13); otherwise it starts from nothing.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(root, 'dist', '.test-build.json');
const BUILD_INFO = join(root, 'dist', '.tsbuildinfo');
/** Held while a run checks and builds dist/: a second run started beside it waits, then finds it built. */
const LOCK = join(root, 'dist', '.test-build.lock');
const INPUTS = [
  'src',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
  'scripts/bundle.js',
  // What npm installed (typescript, esbuild, every type package): changes with any install.
  'node_modules/.package-lock.json',
];

/** Every file under `paths` (relative to the root), sorted, but `skip`. */
function files(paths: string[], skip: string[] = []): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const stat = statSync(join(root, rel), { throwIfNoEntry: false });
    if (skip.includes(rel) || stat === undefined) return;
    if (stat.isDirectory()) for (const name of readdirSync(join(root, rel))) walk(`${rel}/${name}`);
    else out.push(rel);
  };
  for (const p of paths) walk(p);
  return out.sort();
}

/** One hash over the names and contents of `list`. */
function hashOf(list: string[]): string {
  const h = createHash('sha256');
  for (const f of list)
    h.update(`${f}\0`)
      .update(readFileSync(join(root, f)))
      .update('\0');
  return h.digest('hex');
}

const distHash = () => hashOf(files(['dist'], ['dist/.test-build.json', 'dist/.tsbuildinfo', 'dist/.test-build.lock']));

function readStamp(): { inputs?: string; outputs?: string } {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return {};
  }
}

/** Whether the process `pid` is alive (a lock left by a killed run is not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `fn` holding LOCK: two runs in one worktree at once (two `npx vitest`) built dist/ together,
 * tsc and the bundle writing the same files while the other's tests spawned them. The lock names its
 * holder's pid; one whose holder died is taken over.
 */
async function withBuildLock(fn: () => void): Promise<void> {
  mkdirSync(join(root, 'dist'), { recursive: true });
  for (;;) {
    try {
      const fd = openSync(LOCK, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder = 0;
      try {
        holder = Number.parseInt(readFileSync(LOCK, 'utf8') || '0', 10);
      } catch (e) {
        // Released between the open and this read: try again at once.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      // An empty file is a holder between its open and its write: wait for it like any other.
      if (holder > 0 && !alive(holder)) rmSync(LOCK, { force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    fn();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

export default async function setup(): Promise<(() => void) | undefined> {
  // Each project may inherit this setup; one build per vitest process is enough.
  if (process.env.CAMPAIGN_SYNC_TEST_BUILT === '1') return undefined;
  // The request budget's slots (store/sqlite/budget-slots.ts) live in the user's state folder: the
  // tests (and the CLIs they spawn) get a folder of their own, never the tester's, removed when the
  // run ends (it was left behind, one folder per run, in the system's temporary folder).
  const state = mkdtempSync(join(tmpdir(), 'campaign-sync-state-'));
  process.env.XDG_STATE_HOME = state;
  // A machine's NODE_EXTRA_CA_CERTS (this one's names the system bundle) makes every Node start read
  // and parse it: ~70 ms of CPU each, for the ~400 CLIs and the simulators a run spawns. No test
  // reaches a TLS server outside its own but the package test's npm, which gets it back (kept here:
  // the npm registry may sit behind this machine's CA); those about the variable set it.
  if (process.env.NODE_EXTRA_CA_CERTS) process.env.CAMPAIGN_SYNC_TEST_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS;
  delete process.env.NODE_EXTRA_CA_CERTS;
  await withBuildLock(build);
  process.env.CAMPAIGN_SYNC_TEST_BUILT = '1';
  return () => rmSync(state, { recursive: true, force: true });
}

/** Builds dist/ unless the stamp says it is the build of the inputs as they are. */
function build(): void {
  const inputs = hashOf(files(INPUTS));
  const stamp = readStamp();
  const distIntact = stamp.outputs !== undefined && existsSync(join(root, 'dist')) && distHash() === stamp.outputs;
  if (!(distIntact && stamp.inputs === inputs)) {
    rmSync(STAMP, { force: true });
    // tsc's incremental state is only trusted over the dist/ it describes.
    if (!distIntact) rmSync(BUILD_INFO, { force: true });
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const args = [tsc, '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', BUILD_INFO];
    execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
    execFileSync(process.execPath, ['scripts/bundle.js'], { cwd: root, stdio: 'inherit' });
    writeFileSync(STAMP, `${JSON.stringify({ inputs, outputs: distHash() })}\n`);
  }
}
