/**
 * What the helpers close after each test file (simulators, temporary folders, proxies, PostgreSQL
 * schemas). A helper registers its cleanup here once, when first imported; test/helpers/after-file.ts,
 * a setup file, runs every cleanup after each file's tests. A module-level `afterAll` in a helper would
 * not do: with the workers shared between files (`isolate: false`), a helper module is evaluated once
 * per worker, and its hook would only ever run for the first file that imported it.
 */
const cleanups = new Set<() => unknown>();

/** Runs `fn` after every test file from now on (the same function twice is one cleanup). */
export function atFileEnd(fn: () => unknown): void {
  cleanups.add(fn);
}

/** Runs every registered cleanup, in registration order; the first failure is thrown after all ran. */
export async function runFileEnd(): Promise<void> {
  let first: unknown;
  for (const fn of cleanups) {
    try {
      await fn();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) throw first;
}
