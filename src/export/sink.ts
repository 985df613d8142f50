/**
 * Where an export's bytes go. Writers hand a sink large chunks (about 1 MB). The private temporary
 * file takes them with write(2) at once (FileSink: a local file's write lands in the page cache, and
 * a round trip through libuv's thread pool per chunk cost more than the write); stdout is a stream
 * (StreamSink) that writers wait on (`drain`) whenever its buffer is full, so memory stays flat
 * however fast rows come. A stream error (EPIPE) is kept and thrown at the writer's next step.
 */
import { fdatasync, writeSync } from 'node:fs';
import type { Writable } from 'node:stream';

/** Chunks of about this many bytes (UTF-16 code units for text) go to the stream at once. */
export const CHUNK = 1 << 20;

export interface ByteSink {
  /**
   * Writes a chunk, which the sink may keep until it calls `written` (a file: before returning; a
   * stream: once the chunk is out): only then may the writer fill it again. False asks the writer to
   * await drain().
   */
  write(chunk: string | Uint8Array, written?: () => void): boolean;
  /** Resolves once the sink has room again. */
  drain(): Promise<void>;
  /** Waits until every byte is handed over; a file's stream is ended, stdout stays open. */
  end(): Promise<void>;
}

/** A file's bytes go to disk in the background every this many bytes. */
const SYNC_EVERY = 8 * CHUNK;

/**
 * An open file descriptor, written synchronously; errors (ENOSPC, EIO) are thrown by write(). Every
 * 8 MB an fdatasync runs in the background (libuv's pool), so that the fsync before the rename
 * (core/fs/partial-file.ts) finds little left to write (docs/performance.md). Its error, if any, is
 * thrown by end(): the kernel reports a writeback error once per descriptor, so it must not be lost.
 */
export class FileSink implements ByteSink {
  private bytes = 0;
  private synced = 0;
  private syncing: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(private readonly fd: number) {}

  write(chunk: string | Uint8Array, written?: () => void): boolean {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let done = 0;
    // write(2) may take part of a chunk; the rest follows until all of it is written.
    while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done);
    written?.();
    this.bytes += done;
    if (this.syncing === undefined && this.bytes - this.synced >= SYNC_EVERY) this.sync();
    return true;
  }

  async drain(): Promise<void> {}

  /** Waits for the background sync; throws its error. */
  async end(): Promise<void> {
    await this.settle();
    if (this.failure) throw this.failure;
  }

  /** Waits for the background sync, never throws: the descriptor may be closed after this. */
  async settle(): Promise<void> {
    await this.syncing;
  }

  private sync(): void {
    this.synced = this.bytes;
    this.syncing = new Promise((resolve) =>
      fdatasync(this.fd, (err) => {
        if (err) this.failure ??= err;
        this.syncing = undefined;
        resolve();
      }),
    );
  }
}

export class StreamSink implements ByteSink {
  private failure: Error | undefined;
  private readonly onError = (err: Error) => {
    this.failure ??= err;
  };

  /**
   * @param close end the stream at the end (a file's); stdout is left open.
   * @param signal SIGINT/SIGTERM: a wait for a reader that does not read (`export | less`) ends with
   *   the signal's abort error, so the export stops at once rather than at the next chunk.
   */
  constructor(
    private readonly stream: Writable,
    private readonly close = false,
    private readonly signal?: AbortSignal,
  ) {
    stream.on('error', this.onError);
  }

  /** Writes a chunk; throws the stream's error if it has failed. Call drain() when this returns false. */
  write(chunk: string | Uint8Array, written?: () => void): boolean {
    this.check();
    // A chunk the stream failed to write is not handed back: the export ends with the stream's error.
    return this.stream.write(chunk, written === undefined ? undefined : (err) => err || written());
  }

  /** Resolves once the stream's buffer has room again (at once if it has). */
  async drain(): Promise<void> {
    this.check();
    if (!this.stream.writableNeedDrain) return;
    await this.until('drain');
  }

  /** Ends a file's stream and waits until every byte is handed to the file (not for stdout: it stays open). */
  async end(): Promise<void> {
    this.check();
    if (this.close) {
      this.stream.end();
      await this.until('finish');
      this.stream.off('error', this.onError);
    } else {
      // stdout keeps the listener: a reader that goes away after the last write (EPIPE) is no crash.
      await this.drain();
      // Every write handed over, and its outcome known: stdout to a file writes synchronously but
      // reports a failure (ENOSPC on a full disk) a tick later, so an export whose bytes fit in one
      // chunk ended before its error arrived, and exited 0 over an empty file. An empty write's
      // callback runs after those of every write before it, then the error event has been emitted.
      await new Promise<void>((resolve) => this.stream.write('', () => resolve()));
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.check();
    }
  }

  private until(event: 'drain' | 'finish'): Promise<void> {
    return new Promise((resolve, reject) => {
      const off = () => {
        this.stream.off(event, done);
        this.stream.off('error', fail);
        this.stream.off('close', closed);
        this.signal?.removeEventListener('abort', aborted);
      };
      const done = () => {
        off();
        resolve();
      };
      const fail = (err: Error) => {
        off();
        reject(err);
      };
      // A destroyed stream (the reader of a pipe went away) emits neither drain nor finish.
      const closed = () => {
        off();
        reject(this.failure ?? Object.assign(new Error('write after the stream closed'), { code: 'EPIPE' }));
      };
      const aborted = () => {
        off();
        reject(this.signal?.reason);
      };
      if (this.signal?.aborted) return aborted();
      this.stream.once(event, done);
      this.stream.once('error', fail);
      this.stream.once('close', closed);
      this.signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }
}
