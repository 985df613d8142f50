/**
 * Programs some tests need that `npm install` cannot bring (zsh, fish, dash, openssl, sqlite3, strace, python3,
 * faketime, promtool; PostgreSQL has
 * `describePg` in pg.ts, by the same rule). Under CI=true a missing one fails the test that needs it,
 * naming it: .ci/run installs them, and CI must never pass by skipping. Elsewhere the test is
 * skipped and one line per program says what to install.
 */
import { spawnSync } from 'node:child_process';
import { describe, it, type TestContext } from 'vitest';

/** Debian's package of each program. */
const PACKAGES: Record<string, string> = {
  zsh: 'zsh',
  fish: 'fish',
  dash: 'dash',
  openssl: 'openssl',
  sqlite3: 'sqlite3',
  strace: 'strace',
  python3: 'python3',
  faketime: 'faketime',
  promtool: 'prometheus',
};
const found = new Map<string, boolean>();
const said = new Set<string>();

/** Whether `program` is on PATH. */
export function hasProgram(program: string): boolean {
  let yes = found.get(program);
  if (yes === undefined) {
    yes = spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;
    found.set(program, yes);
  }
  return yes;
}

function missing(program: string): Error {
  return new Error(
    `${program} is not installed; under CI the tests that need it must run (apt-get install ${PACKAGES[program] ?? program})`,
  );
}

function sayOnce(program: string): void {
  if (said.has(program)) return;
  said.add(program);
  console.warn(`SKIPPED tests that need ${program}: install it to run them (apt-get install ${PACKAGES[program] ?? program})`);
}

/** Whether a test can use `program`: true when installed; under CI a missing one throws; elsewhere false, said once. */
export function canUse(program: string): boolean {
  if (hasProgram(program)) return true;
  if (process.env.CI === 'true') throw missing(program);
  sayOnce(program);
  return false;
}

/** Skips the running test unless every program is installed (under CI, fails it instead). */
export function needs(ctx: TestContext, ...programs: string[]): void {
  for (const program of programs) if (!canUse(program)) ctx.skip();
}

let preload: string | undefined;

/**
 * The environment that puts a spawned process on a clock `offset` off (faketime's syntax: `+400d`,
 * `-20m`, `+2h`): libfaketime preloaded as the `faketime` program itself preloads it, asked of it once.
 * The process is spawned directly (not under `faketime`, which forks): signals reach it.
 */
export function fakeTimeEnv(offset: string): Record<string, string> {
  preload ??= spawnSync('faketime', ['-f', '+0', 'sh', '-c', 'printf %s "$LD_PRELOAD"'], { encoding: 'utf8' }).stdout;
  if (!preload) throw new Error('faketime set no LD_PRELOAD: cannot put a process on another clock');
  return { LD_PRELOAD: preload, FAKETIME: offset };
}

/** `describe` for a block whose setup already runs `program` (a certificate made at collection). */
export function describeWith(program: string, name: string, fn: () => void): void {
  if (hasProgram(program)) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it(`needs ${program}`, () => {
        throw missing(program);
      });
    });
    return;
  }
  sayOnce(program);
  describe.skip(name, () => {
    it(`needs ${program}`, () => {});
  });
}
