/**
 * The CLI run in-process through `run(argv, io)` (src/main.ts) with streams and an environment of the
 * test's own, as gh's `iostreams.Test()`: the same result as the spawned `cli()` of ./index.ts
 * without a Node start and a bundle load per command (~0.3 s of CPU each). A component test switches
 * by importing `runCli` instead of `cli`. Tests about the process itself (signals, kill -9, a lock
 * held by another process, the launcher, a terminal, Node's start-up) keep spawning it.
 */
import { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Clock } from '../../src/core/clock.js';
import type { Waits } from '../../src/core/waits.js';
import { run } from '../../src/main.js';
import { BIN, type CliResult, tempDir } from './index.js';

/** A stdout or stderr that keeps what was written, decoded as one stream (a character may span two writes). */
class Capture extends Writable {
  private readonly decoder = new StringDecoder('utf8');
  text = '';

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.text += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    done();
  }

  /** Everything written, a cut character at the end included (as U+FFFD). */
  all(): string {
    return this.text + this.decoder.end();
  }
}

/** The working folder is the process's: one in-process run with a `cwd` at a time. */
let inFolder = false;

/**
 * Runs the CLI in-process to its end; `env` and `cwd` as `cli()` takes them. `waits` shortens the
 * run's waits (core/waits.ts), so that a test of what happens when one runs out does not wait it out;
 * `clock` is the run's (core/io.ts `Io.clock`): its backoffs, budget windows and pauses between watch
 * passes sleep on it, and the ages it judges are its (a fakeClock of ./clock.ts records the sleeps
 * and returns at once; one set forward makes a file or a retention due without waiting).
 */
export async function runCli(
  args: string[],
  opts: {
    env?: Record<string, string | undefined>;
    cwd?: string;
    timeoutMs?: number;
    waits?: Partial<Waits>;
    clock?: Clock;
    /** Loopback hosts the PostgreSQL TLS rule takes for other machines (core/io.ts `Io.offLoopback`). */
    offLoopback?: readonly string[];
  } = {},
): Promise<CliResult> {
  const given: Record<string, string | undefined> = {
    ...process.env,
    CAMPAIGN_SYNC_BASE_URL: undefined,
    CAMPAIGN_SYNC_API_KEY: undefined,
    CAMPAIGN_SYNC_DB: undefined,
    CAMPAIGN_SYNC_RATE_LIMIT: undefined,
    // Each run's request budget is its own, unless a test shares a state folder on purpose.
    XDG_STATE_HOME: tempDir(),
    ...opts.env,
  };
  // As a spawned process's environment: an unset variable is absent, not undefined.
  const env = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
  const stdout = new Capture();
  const stderr = new Capture();
  // stdin as the spawned CLI's (`stdio: 'ignore'`): empty, and not a terminal.
  const stdin = Readable.from([]);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 60_000);
  const home = process.cwd();
  if (opts.cwd !== undefined) {
    if (inFolder) throw new Error('runCli: two in-process runs with a cwd at once; spawn one with cli()');
    inFolder = true;
    process.chdir(opts.cwd);
  }
  try {
    const code = await run([process.execPath, BIN, ...args], {
      stdout,
      stderr,
      stdin,
      env,
      signal: controller.signal,
      waits: opts.waits,
      clock: opts.clock,
      ...(opts.offLoopback === undefined ? {} : { offLoopback: opts.offLoopback }),
    });
    return { code, signal: null, stdout: stdout.all(), stderr: stderr.all() };
  } finally {
    clearTimeout(timer);
    if (opts.cwd !== undefined) {
      process.chdir(home);
      inFolder = false;
    }
  }
}
