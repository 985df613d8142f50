/**
 * A yes/no question on the terminal, for what costs the user something if done by mistake. Asked
 * only when a person is there (stdin and stderr are terminals, no --json, --quiet or CI): elsewhere
 * the command asks for an explicit flag instead, so a script never hangs on a prompt.
 */
import { createInterface } from 'node:readline/promises';
import { currentIo, type Io } from '../core/io.js';
import { Cancelled } from '../errors.js';
import type { Output } from './output.js';

/** True when a question can be asked and answered. */
export function canAsk(out: Output, stdin: Io['stdin'] = currentIo().stdin): boolean {
  return out.interactive && stdin.isTTY === true;
}

/**
 * Asks `question` (y/N); true only for a yes, false for anything else and for Ctrl-D (end of input:
 * the default, no). Ctrl-C at the prompt, or a signal meanwhile, throws Cancelled(`cancelled`), exit
 * 130: the terminal in raw mode gives Ctrl-C to readline, not as a SIGINT to the process.
 */
export async function confirm(
  out: Output,
  question: string,
  cancelled: string,
  signal?: AbortSignal,
  stdin: Io['stdin'] = currentIo().stdin,
): Promise<boolean> {
  const stderr = out.streams.stderr as NodeJS.WritableStream;
  const rl = createInterface({ input: stdin, output: stderr });
  const stop = new AbortController();
  let interrupted = false;
  const interrupt = () => {
    interrupted = true;
    stop.abort();
  };
  // With a listener, readline emits Ctrl-C as this event instead of closing as if at end of input.
  rl.on('SIGINT', interrupt);
  signal?.addEventListener('abort', interrupt, { once: true });
  try {
    if (signal?.aborted) interrupt();
    const answer = await rl.question(`${question} (y/N) `, { signal: stop.signal });
    return /^y(es)?$/i.test(answer.trim());
  } catch (err) {
    if ((err as Error)?.name !== 'AbortError') throw err;
    if (interrupted) throw new Cancelled(cancelled);
    // The cursor is still on the prompt's line: what follows starts a line of its own.
    stderr.write('\n');
    return false;
  } finally {
    signal?.removeEventListener('abort', interrupt);
    rl.close();
  }
}
