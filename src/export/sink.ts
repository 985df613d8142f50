/**
 * Where an export's bytes go. Writers hand a sink large chunks (about 1 MB). The private temporary
 * file takes them with write(2) at once (FileSink: a local file's write lands in the page cache, and
 * a round trip through libuv's thread pool per chunk cost more than the write); stdout is a stream
 * (StreamSink) that writers wait on (`drain`) whenever its buffer is full, so memory stays flat
 * however fast rows come. A stream error (EPIPE) is kept and thrown at the writer's next step.
 */
import { writeSync } from 'node:fs';
import type { Writable } from 'node:stream';

/** Chunks of about this many bytes (UTF-16 code units for text) go to the stream at once. */
export const CHUNK = 1 << 20;

export interface Sink {
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

/** An open file descriptor, written synchronously; errors (ENOSPC, EIO) are thrown by write(). */
export class FileSink implements Sink {
  constructor(private readonly fd: number) {}

  write(chunk: string | Uint8Array, written?: () => void): boolean {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let done = 0;
    // write(2) may take part of a chunk; the rest follows until all of it is written.
    while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done);
    written?.();
    return true;
  }

  async drain(): Promise<void> {}

  async end(): Promise<void> {}
}

export class StreamSink implements Sink {
  private failure: Error | undefined;
  private readonly onError = (err: Error) => {
    this.failure ??= err;
  };

  /** @param close end the stream at the end (a file's); stdout is left open. */
  constructor(
    private readonly stream: Writable,
    private readonly close = false,
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
    }
  }

  private until(event: 'drain' | 'finish'): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        this.stream.off(event, done);
        this.stream.off('error', fail);
        this.stream.off('close', closed);
        resolve();
      };
      const fail = (err: Error) => {
        this.stream.off(event, done);
        this.stream.off('close', closed);
        reject(err);
      };
      // A destroyed stream (the reader of a pipe went away) emits neither drain nor finish.
      const closed = () => {
        this.stream.off(event, done);
        this.stream.off('error', fail);
        reject(this.failure ?? Object.assign(new Error('write after the stream closed'), { code: 'EPIPE' }));
      };
      this.stream.once(event, done);
      this.stream.once('error', fail);
      this.stream.once('close', closed);
    });
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }
}
