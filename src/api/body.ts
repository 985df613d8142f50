/**
 * One HTTP exchange, read whole, through undici's low-level `dispatch`: the answer's
 * chunks are collected as they arrive and handed on as one Buffer. undici's `request` would wrap each answer in
 * a Readable stream, an AsyncResource and an AbortSignal listener, which cost a third of the
 * client's CPU on a 200-page pull (paired, process.cpuUsage; see docs/performance.md).
 *
 * The body is capped: a declared Content-Length over the cap is refused at the headers, and the
 * bytes kept never exceed it. A gzip body is inflated when it ends, with the cap on the inflated
 * size (a small body that inflates to gigabytes, a gzip bomb, is an error at the cap, not an
 * out-of-memory); `wireBytes` is what the network carried. Errors: ApiError (invalid) over the cap,
 * for an unknown coding or a corrupt gzip body; anything else (a reset, a truncated body, a refused
 * connection, the caller's `cancel`) is thrown as undici or zlib threw it.
 */
import { createRequire } from 'node:module';
import { gunzip } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { type Redact, shorten } from '../core/redact.js';
import { ApiError, type RequestInfo } from '../errors.js';

export type Headers = Record<string, string | string[] | undefined>;

export interface Answer {
  status: number;
  headers: Headers;
  /** The body's bytes, inflated when it came gzipped: parsed from bytes (core/json-bytes.ts), decoded only for an error's text. */
  body: Buffer;
  /** Bytes received (compressed, when the body was). */
  wireBytes: number;
}

/** undici's own header parsing, as `request` gives it (lower-case names, repeated ones as arrays). */
const parseHeaders = (createRequire(import.meta.url)('undici/lib/core/util.js') as { parseHeaders(raw: Buffer[]): Headers }).parseHeaders;

/** The codings we ask for and undo; identity needs nothing. */
function coding(status: number, headers: Headers, info: RequestInfo, redact: Redact): 'identity' | 'gzip' | ApiError {
  const raw = String(headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (raw === '' || raw === 'identity') return 'identity';
  if (raw === 'gzip' || raw === 'x-gzip') return 'gzip';
  const shown = JSON.stringify(shorten(redact(raw), 40));
  return new ApiError(
    info,
    `${status}: response body has content-encoding ${shown}, which campaign-sync cannot decode (it asks for gzip only)`,
    {
      invalid: true,
    },
  );
}

/** What one exchange needs: where, and how much of a body it may keep. */
export interface ExchangeRequest {
  origin: string;
  path: string;
  headers: Record<string, string>;
  maxBytes: number;
  /** Takes the key out of the answer's text quoted in an error (core/redact.ts). */
  redact: Redact;
}

/**
 * A pending exchange: `answer` settles once; `cancel(err)` ends it with `err` (a timeout, the
 * caller's abort) whenever it is called, before the connection, while the headers or the body arrive.
 */
export interface Exchange {
  answer: Promise<Answer>;
  cancel(err: Error): void;
  /** Body bytes received so far (compressed, when the body was): what a failed exchange had read. */
  received(): number;
  /** True when the answer's headers came and its body was refused unread (see BodyHandler.onHeaders). */
  skipped(): boolean;
  /**
   * How far the exchange got: `unsent`, never handed to a connected socket (a refused or never
   * completed connection, a proxy's refusal: no server can count it); `sent`, handed to one, no
   * answer yet; `answered`, its status came (the server counted it, whatever became of the body).
   */
  stage(): ExchangeStage;
  /** The answer's status, once it came (0 before). */
  readonly status: number;
}

export type ExchangeStage = 'unsent' | 'sent' | 'answered';

/** Sends a GET and collects its whole answer (see the module's comment). */
export function exchange(dispatcher: Dispatcher, req: ExchangeRequest, info: RequestInfo): Exchange {
  const handler = new BodyHandler(req.maxBytes, info, req.redact);
  dispatcher.dispatch({ origin: req.origin, path: req.path, method: 'GET', headers: req.headers }, handler);
  return handler;
}

/**
 * undici's legacy handler interface (onConnect … onComplete), which every dispatcher and MockAgent
 * call; the handler is the Exchange too, so a request allocates no wrapper around it.
 */
class BodyHandler implements Exchange {
  readonly answer: Promise<Answer>;
  private done!: (a: Answer) => void;
  private failed!: (err: unknown) => void;
  private abort: ((err: Error) => void) | undefined;
  /** Why the exchange was ended by us; once set, every later callback only finishes the ending. */
  private reason: Error | undefined;
  private settled = false;
  /** Handed to a connected socket (undici calls onConnect right before it writes the request). */
  private sent = false;
  status = 0;
  private headers: Headers = {};
  private gzip = false;
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** Body bytes received; the last chunk before a cut (over the cap) counts, since it was read. */
  private wireBytes = 0;
  /** The body was refused at the headers, unread: a declared length over the cap, an unknown coding. */
  private refused = false;

  constructor(
    private readonly maxBytes: number,
    private readonly info: RequestInfo,
    private readonly redact: Redact,
  ) {
    this.answer = new Promise<Answer>((resolve, reject) => {
      this.done = resolve;
      this.failed = reject;
    });
  }

  received(): number {
    return this.wireBytes;
  }

  skipped(): boolean {
    return this.refused;
  }

  stage(): ExchangeStage {
    return this.status > 0 ? 'answered' : this.sent ? 'sent' : 'unsent';
  }

  /**
   * Ends the exchange with `err`. undici is told after the callback that asked (a microtask), never
   * from inside its parser. Before the connection the answer settles at once: undici calls
   * `onConnect` only once a socket (or a proxy's tunnel) is up, which may be minutes away or never
   * (a proxy silent on CONNECT, a SYN never answered), and --timeout and signals must not wait for
   * it. Should it connect later, `onConnect` aborts the request before anything is sent.
   */
  cancel(err: Error): void {
    if (this.settled || this.reason) return;
    this.reason = err;
    if (!this.abort) {
      this.fail(err);
      return;
    }
    queueMicrotask(() => this.abort?.(err));
  }

  onConnect(abort: (err: Error) => void): void {
    this.abort = abort;
    if (this.reason) abort(this.reason);
    else this.sent = true;
  }

  onHeaders(status: number, raw: Buffer[]): boolean {
    // 1xx (100 Continue, 103 Early Hints) are not the answer.
    if (status < 200 || this.reason) return true;
    this.status = status;
    this.headers = parseHeaders(raw);
    const kind = coding(status, this.headers, this.info, this.redact);
    if (kind instanceof ApiError) {
      this.refused = true;
      this.cancel(kind);
      return true;
    }
    this.gzip = kind === 'gzip';
    const declared = Number(this.headers['content-length']);
    if (declared > this.maxBytes) {
      this.refused = true;
      this.cancel(this.overCap(` of ${declared} bytes`));
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.reason) return true;
    this.wireBytes += chunk.length;
    this.kept += chunk.length;
    // The wire bytes of a gzip body are capped too: they inflate to more, not less, but for a few header bytes.
    if (this.kept > this.maxBytes) this.cancel(this.overCap(this.gzip ? ' (compressed)' : ''));
    else this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.reason) {
      this.fail(this.reason);
      return;
    }
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.kept);
    this.chunks.length = 0;
    if (!this.gzip) {
      this.finish(body);
      return;
    }
    gunzip(body, { maxOutputLength: this.maxBytes }, (err, inflated) => {
      if (!err) return this.finish(inflated);
      const code = (err as { code?: string }).code ?? '';
      if (code === 'ERR_BUFFER_TOO_LARGE') return this.fail(this.overCap(' (inflated)'));
      if (code.startsWith('Z_') || code === 'ERR_ZLIB_INITIALIZATION_FAILED') {
        return this.fail(new ApiError(this.info, `${this.status}: gzip body cannot be inflated (${err.message})`, { invalid: true }));
      }
      this.fail(err);
    });
  }

  onError(err: Error): void {
    this.fail(this.reason ?? err);
  }

  private overCap(what: string): ApiError {
    return new ApiError(this.info, `${this.status}: response body${what} is over the ${this.maxBytes}-byte cap`, { invalid: true });
  }

  private finish(body: Buffer): void {
    if (this.reason) {
      this.fail(this.reason);
      return;
    }
    if (this.settled) return;
    this.settled = true;
    this.done({ status: this.status, headers: this.headers, body, wireBytes: this.wireBytes });
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.chunks.length = 0;
    this.failed(err);
  }
}
