/**
 * The only place that calls process.exit: every error maps to an exit code of docs/exit-codes.md.
 * The first SIGINT/SIGTERM/SIGHUP aborts the shared signal (work in flight commits or rolls back, then
 * the command returns); a second one exits at once.
 */
import { CommanderError } from 'commander';
import { buildProgram, commanderMessage, type RunResult } from './cli.js';
import { extraCaCertsProblem } from './config/extra-ca.js';
import { type Io, processIo, withIo } from './core/io.js';
import {
  CampaignSyncError,
  ExitCode,
  exitCodeFor,
  isAbort,
  isStorageFailure,
  NothingSynced,
  type StorageError,
  storageError,
} from './errors.js';
import { safeJson, showLines, showText } from './ui/escape.js';
import { takeOverWarnings } from './ui/process-warnings.js';

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Errno codes that only storage gives, for fs errors that carry no path (a write to an open file). */
const STORAGE_ONLY = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EFBIG']);

/**
 * A raw fs or SQLite error that no caller wrapped is still a local storage failure (exit 74), never
 * an "internal error": named by the file it was about when the error carries one. An errno error
 * with no path and no storage-only code (EACCES from listen, ECONNRESET) is not storage: left alone.
 */
export function uncaughtStorageError(err: unknown): StorageError | undefined {
  if (err instanceof CampaignSyncError || !isStorageFailure(err)) return undefined;
  const { code, syscall, path } = err as { code: string; syscall?: unknown; path?: unknown };
  if (typeof path === 'string') return storageError(err, `cannot ${typeof syscall === 'string' ? syscall : 'use'} ${path}`) as StorageError;
  if (code.startsWith('SQLITE_') || STORAGE_ONLY.has(code)) return storageError(err, 'local storage failed') as StorageError;
  return undefined;
}

/** Whether the command line has `flag` (options end at `--`). */
function wants(argv: string[], flag: '--json' | '--quiet'): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes(flag);
}

function wantsJson(argv: string[]): boolean {
  return wants(argv, '--json');
}

/**
 * `status … --nagios`: the run is a Nagios plugin, whose every outcome is a status line on stdout
 * and an exit code of its own scale. Nagios reads exit 2 as CRITICAL and shows only stdout, so a
 * usage error (a bad flag, a bad value, a missing file) must be UNKNOWN (3) with its reason there.
 */
function wantsNagios(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  const options = end < 0 ? args : args.slice(0, end);
  return options[0] === 'status' && options.some((a) => a === '--nagios' || a.startsWith('--nagios='));
}

/** The plugin's UNKNOWN line on stdout, and its exit code (3): a check that could not judge. */
async function nagiosUnknownLine(io: Io, message: string): Promise<number> {
  const { nagiosUnknown } = await import('./ui/health.js');
  const report = nagiosUnknown(message);
  io.stdout.write(`${report.lines.join('\n')}\n`);
  return report.code;
}

/**
 * A command stopped by a signal before it had anything to report (a pull or the first pass of a
 * watch still listing campaigns, or stopped while the CLI loaded): one line, or with --json one
 * document, instead of exiting 0 in silence. Committed work stays; nothing more was done.
 */
function reportInterrupted(argv: string[], io: Io): void {
  if (wantsJson(argv)) io.stdout.write(`${JSON.stringify({ interrupted: true, exit_code: ExitCode.ok })}\n`);
  else if (!wants(argv, '--quiet')) io.stderr.write('campaign-sync: interrupted; nothing more was done\n');
}

/**
 * With --json a script reads stdout: a fatal error (401, the service down, a full disk) is one JSON
 * document there too, `{ "error": …, "exit_code": … }`, besides the line on stderr.
 */
function errorDocument(io: Io, argv: string[], message: string, exitCode: number, requests?: number): void {
  if (wantsJson(argv)) io.stdout.write(`${safeJson(JSON.stringify({ error: message, exit_code: exitCode, requests }))}\n`);
}

/** What a run talks to (core/io.ts), and the signal that stops it (main.ts: SIGINT, SIGTERM, SIGHUP). */
export interface RunIo extends Partial<Io> {
  signal?: AbortSignal;
}

/**
 * Runs the CLI with `argv` (node, launcher, then the arguments) and returns the exit code: main()
 * exits with it; a test runs a command in-process with streams and an environment of its own. What
 * `io` leaves out is the real process's.
 */
export function run(argv: string[], io: RunIo = {}): Promise<number> {
  const { signal = new AbortController().signal, ...given } = io;
  const whole: Io = { ...processIo(), launcher: argv[1] ?? 'campaign-sync', ...given };
  return withIo(whole, () => runIn(argv, whole, signal));
}

async function runIn(argv: string[], io: Io, signal: AbortSignal): Promise<number> {
  const result: RunResult = { exitCode: ExitCode.ok };
  const nagios = wantsNagios(argv);
  const program = buildProgram(signal, result, io, { nagios });
  // `help forgt` printed the whole help on stderr, without a word about the typo: read as `forgt`,
  // it is commander's one line, `unknown command 'forgt' (Did you mean forget?)`, exit 2.
  const [, , first, topic, ...rest] = argv;
  if (first === 'help' && topic !== undefined && rest.length === 0 && !topic.startsWith('-')) {
    const known = program.commands.some((c) => c.name() === topic || c.aliases().includes(topic));
    if (!known) argv = [argv[0] as string, argv[1] as string, topic];
  }
  try {
    await program.parseAsync(argv);
    return result.exitCode;
  } catch (err) {
    // Help and the version are what was asked for, not a check's outcome.
    if (nagios && !(err instanceof CommanderError && err.exitCode === 0)) {
      if (isAbort(err) && signal.aborted) return nagiosUnknownLine(io, 'interrupted before the check could judge');
      const message = err instanceof CommanderError ? commanderMessage(err.message) : messageOf(err);
      return nagiosUnknownLine(
        io,
        err instanceof CampaignSyncError || err instanceof CommanderError ? message : `internal error: ${message}`,
      );
    }
    if (err instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      if (err.exitCode === 0) return ExitCode.ok;
      // commander printed its line on stderr; a script reading stdout under --json gets its document,
      // as for our own usage errors. Help shown for a missing command has no message of its own.
      const message = err.code === 'commander.help' ? 'a command is needed (add --help for usage)' : commanderMessage(err.message);
      errorDocument(io, argv, message, ExitCode.usage);
      return ExitCode.usage;
    }
    if (isAbort(err) && signal.aborted) {
      reportInterrupted(argv, io);
      return ExitCode.ok;
    }
    const failure = err instanceof CampaignSyncError ? err : uncaughtStorageError(err);
    if (failure) {
      // One terminal-safe line: a message may quote what the service sent (ui/escape.ts).
      io.stderr.write(`campaign-sync: ${showText(messageOf(failure))}\n`);
      errorDocument(io, argv, messageOf(failure), exitCodeFor(failure), failure instanceof NothingSynced ? failure.requests : undefined);
      return exitCodeFor(failure);
    }
    io.stderr.write(`campaign-sync: internal error: ${showText(messageOf(err))}\n`);
    errorDocument(io, argv, `internal error: ${messageOf(err)}`, ExitCode.internal);
    if (io.env.CAMPAIGN_SYNC_DEBUG) io.stderr.write(`${showLines((err as Error)?.stack ?? '')}\n`);
    return ExitCode.internal;
  }
}

/**
 * The first SIGINT/SIGTERM/SIGHUP aborts `controller` (work winds down and the command returns); a
 * second one calls `exit(130)` at once. Returns the handler (tests call it directly).
 */
export function signalHandler(
  controller: AbortController,
  exit: (code: number) => void,
  say: (line: string) => void = (line) => process.stderr.write(line),
): (name: NodeJS.Signals) => void {
  let signals = 0;
  return (name) => {
    signals++;
    if (signals > 1) {
      say(`campaign-sync: second ${name}, exiting now\n`);
      exit(130);
      return;
    }
    controller.abort();
  };
}

/** What bin/campaign-sync.js kept of the signals that arrived while the CLI loaded. */
interface EarlySignals {
  signals: NodeJS.Signals[];
  stop(): void;
}

/**
 * Hands the signals that arrived while the CLI loaded (bin/campaign-sync.js kept them) to `onSignal`,
 * once main()'s own handlers are in place: the launcher's are removed first, so no signal is missed
 * or handled twice. Exported for its test.
 */
export function replayEarlySignals(onSignal: (name: NodeJS.Signals) => void): void {
  const early = (globalThis as Record<symbol, EarlySignals | undefined>)[Symbol.for('campaign-sync.early-signals')];
  if (early === undefined) return;
  early.stop();
  for (const name of early.signals.splice(0)) onSignal(name);
}

/**
 * What a failed stdout does to the run (a reader that went away, `pull | head`: EPIPE; a full disk
 * under `> file`: ENOSPC). Without a listener, Node threw it as an uncaught 'error' event: a stack
 * trace and exit 1, or, for a command whose last write failed, exit 0 with the output lost. Now
 * the command is stopped as by a signal (work in flight commits; watch ends after its pass), and the
 * run exits with the command's own code when the reader went away (as `export | head` already did),
 * else 74 with one line. `export` handles its own stdout (export/sink.ts keeps a listener there).
 */
export function watchStdout(
  stdout: NodeJS.WriteStream,
  controller: AbortController,
  hungUp: () => boolean = () => false,
): { code(code: number, late?: Error | null): number } {
  let failure: NodeJS.ErrnoException | undefined;
  let reported = false;
  stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (stdout.listenerCount('error') > 1) return;
    failure ??= err;
    controller.abort();
  });
  return {
    code(code, late) {
      // The last write's own error: counted like the event, unless a command handles stdout itself
      // (export) or the stream was already given up (destroyed after an earlier failure).
      const own = stdout.listenerCount('error') <= 1 && (late as NodeJS.ErrnoException | null | undefined)?.code !== 'ERR_STREAM_DESTROYED';
      if (late && own) failure ??= late;
      // After SIGHUP the terminal is gone: its EIO is the hangup, not a storage failure.
      if (failure === undefined || failure.code === 'EPIPE' || (failure.code === 'EIO' && hungUp())) return code;
      if (!reported) process.stderr.write(`campaign-sync: cannot write stdout: ${showText(messageOf(failure))}\n`);
      reported = true;
      return ExitCode.storage;
    },
  };
}

export async function main(argv: string[]): Promise<void> {
  const quiet = wants(argv, '--quiet');
  const warn = takeOverWarnings({ quiet, debug: Boolean(process.env.CAMPAIGN_SYNC_DEBUG) });
  const badCa = quiet ? undefined : extraCaCertsProblem();
  if (badCa !== undefined) warn(badCa);
  const controller = new AbortController();
  const stop = signalHandler(controller, (code) => process.exit(code));
  // SIGHUP (the ssh session or tmux window closed) stops a command as SIGTERM does: Node's default
  // killed it with 129, nothing said and watch's open group lost.
  let hungUp = false;
  const onSignal = (name: NodeJS.Signals) => {
    if (name === 'SIGHUP') hungUp = true;
    stop(name);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  replayEarlySignals(onSignal);
  const stdout = watchStdout(process.stdout, controller, () => hungUp);
  // Lines on stderr that nobody reads any more (`2>&1 | head`) are no crash either.
  process.stderr.on('error', () => {});
  // The real process's run needs no async context: outside any run, currentIo() is the process's
  // already. Entering one (AsyncLocalStorage.run) turns on Node's promise hooks (Node 20 and 22) for the rest of the
  // process, which tax every promise after it, the module loader's included.
  const code = stdout.code(await runIn(argv, { ...processIo(), launcher: argv[1] ?? 'campaign-sync' }, controller.signal));
  process.exitCode = code;
  // An interrupted export's stdout is cut short anyway, and its reader may not be reading (`export |
  // less`): waiting for stdout to drain would hang until a second signal.
  if (code === ExitCode.interrupted) process.exit(code);
  // Let stdout drain, then leave even if a keep-alive socket or timer lingers. A write that fails
  // only now (the last lines into a full disk) still changes the exit code.
  process.stdout.write('', (err) => process.exit(stdout.code(code, err)));
}
