/**
 * An export stops at SIGINT/SIGTERM (main.ts aborts the shared signal) between two chunks of output:
 * the writers await this after each chunk. Rows from SQLite come synchronously, so without a turn of
 * the event loop the signal's handler would only run once the whole table was written.
 */
import { setImmediate as turn } from 'node:timers/promises';

/** Lets a pending signal in, then throws the signal's abort error if one came; nothing without a signal. */
export async function between(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return;
  await turn();
  signal.throwIfAborted();
}

/** The rows of an asynchronous source until a signal comes (PostgreSQL's rows: the loop turns by itself). */
export async function* untilAborted<T>(rows: AsyncIterable<T>, signal: AbortSignal | undefined): AsyncGenerator<T> {
  for await (const row of rows) {
    signal?.throwIfAborted();
    yield row;
  }
}
