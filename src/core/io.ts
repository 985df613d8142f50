/**
 * The process a command talks to: its streams, environment and launcher. main.ts hands the real
 * process's to run(); a test hands its own (gh's `iostreams.Test()`) and runs a command in-process.
 * Code that is not handed an Io explicitly reads the current one (the run's, through async context),
 * never `process.stdout`, `process.stderr`, `process.stdin` or `process.env` directly.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Readable, Writable } from 'node:stream';
import { type Clock, realClock } from './clock.js';
import { DEFAULT_WAITS, type Waits } from './waits.js';

export interface Io {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  env: NodeJS.ProcessEnv;
  /** The path the program was started by (argv[1]), for the hints that say how to run it again. */
  launcher: string;
  /** Waits of this run shorter than the defaults (core/waits.ts): tests only. */
  waits?: Partial<Waits>;
  /**
   * The clock of this run's waits and of the ages it judges (currentClock()): the request budget's
   * windows, the client's retry backoff and Retry-After, --notify's backoff, the pause between watch
   * passes and when its lookback and retention are due, the retention's and `forget --older-than`'s
   * cut, the age at which an export's partial file is stale. A fake one (set minutes off, or whose
   * sleeps return at once) is for tests only.
   */
  clock?: Clock;
  /**
   * Loopback hosts (`127.0.0.1`) that the PostgreSQL TLS rule (core/pg-url.ts) takes for other
   * machines: tests only, so that the rule is checked against a real server on loopback. It can only
   * refuse more, never less; no flag or variable sets it.
   */
  offLoopback?: readonly string[];
}

/** The real process's streams, environment and launcher. */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    launcher: process.argv[1] ?? 'campaign-sync',
  };
}

const context = new AsyncLocalStorage<Io>();

/** The Io of the run this code is part of; the real process's outside any run. */
export function currentIo(): Io {
  return context.getStore() ?? processIo();
}

/** The waits of the run this code is part of: its Io's, the default for each one it leaves out. */
export function currentWaits(): Waits {
  return { ...DEFAULT_WAITS, ...currentIo().waits };
}

/** The clock of the run this code is part of: its Io's, the real one when it has none. */
export function currentClock(): Clock {
  return currentIo().clock ?? realClock;
}

/** Runs `fn` with `io` as the current Io of everything it starts, awaited or not. */
export function withIo<T>(io: Io, fn: () => T): T {
  return context.run(io, fn);
}
