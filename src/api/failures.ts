/**
 * What a failed attempt is reported as: a connection that failed (refused, timed out, a proxy's
 * refusal, TLS where HTTP was expected or the other way round), or an answer that is not a page of
 * JSON (an error status with the spec's error body, a redirect, a body that is not JSON). Each message
 * names the request and what to check, never the key. api/client.ts decides when an attempt failed;
 * this file says what it means.
 */
import type { Clock } from '../core/clock.js';
import { type Redact, type Redacted, shorten } from '../core/redact.js';
import { AbortedError, ApiError, AuthError, NetworkError, type RequestInfo } from '../errors.js';
import type { Answer } from './body.js';
import { statedLimit } from './rate-advice.js';
import { NOT_TLS, PROXY_NOT_TLS, parseRetryAfter, TLS_PORT } from './retry.js';
import { speaksTls } from './tls-probe.js';

/** What the messages name: the service as configured and the route to it. */
export interface FailureContext {
  /** The `{base_url}` of the spec, without /v1 (credentials are refused in it, config/config.ts). */
  baseUrl: URL;
  /** What set it, for the errors that say to check it (default `--base-url`). */
  baseUrlWhere: string | undefined;
  timeoutMs: number;
  /** The proxy requests go through (never with its password), if any. */
  proxy: string | undefined;
  redact: Redact;
  clock: Clock;
  signal: AbortSignal | undefined;
}

/** One client's failures in words; it asks a plain-http port whether it speaks TLS at most once. */
export class FailureExplainer {
  private readonly basePath: string;
  /** Whether the plain-http base URL's port speaks TLS, once asked (see tlsPort). */
  private tlsProbe: Promise<boolean> | undefined;

  constructor(private readonly ctx: FailureContext) {
    this.basePath = ctx.baseUrl.pathname.replace(/\/+$/, '');
  }

  /** The error a failed exchange (no whole answer) is reported as. */
  exchangeFailed(err: unknown, info: RequestInfo, timedOut: boolean): Error {
    const { ctx } = this;
    if (ctx.signal?.aborted) return new AbortedError();
    if (timedOut) return new NetworkError(info, 'TIMEOUT', `no complete answer within ${ctx.timeoutMs} ms`, err);
    const code = (err as { code?: string }).code ?? 'ERROR';
    const message = opensslReason(String((err as Error).message ?? err));
    const where = ctx.baseUrl.host;
    if (NOT_TLS.test(code) && ctx.proxy?.startsWith('https://')) {
      return new NetworkError(
        info,
        PROXY_NOT_TLS,
        `${code}: the proxy ${ctx.proxy} or ${where} behind it answered, but not in TLS (${message})`,
        err,
      );
    }
    if (NOT_TLS.test(code)) {
      return new NetworkError(info, code, `${code}: ${where} answered, but not in TLS (${message})${this.via()}`, err);
    }
    if (ctx.proxy === undefined && tlsRecord(err)) {
      return new NetworkError(info, TLS_PORT, `${where} answered with TLS, not HTTP (${message}): it speaks TLS there`, err);
    }
    if (ctx.proxy === undefined && code === 'ECONNREFUSED') {
      return new NetworkError(
        info,
        code,
        `${code}: nothing listens at ${this.baseText()} (connection refused): check ${this.baseWhere()}`,
        err,
      );
    }
    if (ctx.proxy === undefined) return new NetworkError(info, code, `${code}: ${message}`, err);
    const refused = /^Proxy response \((\d+)\)/.exec(message);
    if (refused) return new NetworkError(info, `PROXY_${refused[1]}`, `proxy ${ctx.proxy} answered ${refused[1]} to CONNECT`, err);
    return new NetworkError(info, code, `${code}: ${message}${this.via()}`, err);
  }

  /**
   * For a plain-http request closed before any byte of an answer (`failure`, see closedSilently): when
   * the port completes a TLS handshake (api/tls-probe.ts, asked once), the error that says it speaks
   * TLS, which is not retried; undefined when it does not, or the request went through a proxy.
   */
  async tlsPort(failure: Error, info: RequestInfo): Promise<Error | undefined> {
    const { ctx } = this;
    if (ctx.proxy !== undefined || ctx.baseUrl.protocol !== 'http:') return undefined;
    this.tlsProbe ??= speaksTls(ctx.baseUrl, Math.min(ctx.timeoutMs, TLS_PROBE_MS), ctx.signal);
    if (!(await this.tlsProbe)) return undefined;
    const where = ctx.baseUrl.host;
    return new NetworkError(info, TLS_PORT, `${where} closed the connection without an HTTP answer, and it speaks TLS there`, failure);
  }

  /**
   * The error an answer that is not a page of JSON means: not JSON, a redirect, an error status.
   * `answered`: whether any request of the client got a 2xx answer; until one has, a 404 says more
   * of the base URL than of the campaign.
   */
  answerError(answer: Answer, info: RequestInfo, path: string, answered: boolean): Error {
    const { ctx } = this;
    const { status, headers: resHeaders, body } = answer;
    if (status >= 200 && status < 300) {
      const text = ctx.redact(oneLine(body.toString('utf8')));
      const type = ctx.redact(String(resHeaders['content-type'] ?? 'no content-type').split(';')[0] ?? '');
      return new ApiError(info, `${status} but the body is not JSON (${type}): ${preview(text)}`, { invalid: true });
    }
    if (status >= 300 && status < 400) {
      const location = String(resHeaders.location ?? '');
      let where = 'elsewhere';
      try {
        where = new URL(location, `${ctx.baseUrl.origin}${path}`).host;
      } catch {}
      return new ApiError(info, `${status} redirect to ${where} not followed (the key is only sent to the configured base URL)`, {
        status,
        invalid: true,
      });
    }
    const { message, requestId } = errorFields(body.toString('utf8'), ctx.redact);
    const retryAfterMs = parseRetryAfter(resHeaders['retry-after'], ctx.clock.now());
    let detail = `${status} ${message ?? statusText(status)}`;
    if (status === 400 && ctx.baseUrl.protocol === 'http:' && PLAIN_TO_TLS_PORT.test(body.toString('latin1'))) {
      detail += '; the port speaks HTTPS: use https:// in --base-url';
    }
    // Before any answer was found, a 404 is the service's root missed, not a campaign gone.
    if (status === 404 && !answered) {
      const hint = this.basePath
        ? `the path of ${this.baseWhere()} (${this.basePath}) is probably wrong`
        : `${this.baseWhere()} probably lacks the path the service lives under`;
      detail += `: nothing at ${this.baseText()}${info.path}; ${hint}: give the URL that /v1 hangs from`;
    }
    if (status === 401) {
      return new AuthError(info, `${detail} (check the API key: --api-key-file or CAMPAIGN_SYNC_API_KEY)`, { status, requestId });
    }
    const stated = status === 429 ? statedLimit(resHeaders) : undefined;
    return new ApiError(info, detail, { status, requestId, retryAfterMs, statedLimit: stated });
  }

  /** The base URL as the user gave it. */
  private baseText(): string {
    return `${this.ctx.baseUrl.origin}${this.basePath}`;
  }

  private baseWhere(): string {
    return this.ctx.baseUrlWhere ?? '--base-url';
  }

  private via(): string {
    return this.ctx.proxy === undefined ? '' : ` (through proxy ${this.ctx.proxy})`;
  }
}

/**
 * undici's "other side closed" on a connection that never received a byte: no keep-alive race (the
 * connection had answered before), but a server that hung up on the request itself.
 */
export function closedSilently(err: Error): boolean {
  const cause = err.cause as { code?: unknown; socket?: { bytesRead?: unknown } } | undefined;
  return err instanceof NetworkError && cause?.code === 'UND_ERR_SOCKET' && cause.socket?.bytesRead === 0;
}

/** How long the TLS probe of a plain-http port may take (a loopback handshake takes milliseconds). */
const TLS_PROBE_MS = 3000;

/**
 * What nginx and Go's net/http answer (400) to plain HTTP sent to their HTTPS port; other servers
 * send a TLS alert (tlsRecord) or close without a byte (closedSilently).
 */
const PLAIN_TO_TLS_PORT = /plain HTTP request was sent to HTTPS port|HTTP request to an HTTPS server/i;

/**
 * undici's parser error for an answer that starts with a TLS record (0x15 alert or 0x16 handshake,
 * then major version 3): a TLS server refusing plain HTTP.
 */
function tlsRecord(err: unknown): boolean {
  const data = (err as { data?: unknown }).data;
  // undici 7 leaves this error's `code` unset for llhttp's INVALID_CONSTANT: known by its name.
  if ((err as Error).name !== 'HTTPParserError' || typeof data !== 'string' || data.length < 2) return false;
  const type = data.charCodeAt(0);
  return (type === 0x15 || type === 0x16) && data.charCodeAt(1) === 3;
}

/**
 * OpenSSL's own line (`80AC…:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/…:350:`)
 * reduced to its reason; any other message is left as it is.
 */
function opensslReason(message: string): string {
  // Node's connect errors end with the local address, unknown when the socket was never made
  // (EMFILE, EADDRNOTAVAIL): `connect EMFILE 127.0.0.1:443 - Local (undefined:undefined)`.
  const plain = message.replace(/ - Local \(undefined:undefined\)$/, '');
  return /^[0-9A-F]+:error:[0-9A-F]+:[^:]*:[^:]*:([^:]+):/.exec(plain)?.[1] ?? plain;
}

/**
 * The spec's error body (§7), when the body is one: its fields are redacted once parsed (JSON escapes
 * could hide the key from a redaction of the raw text), and only then cut.
 */
function errorFields(text: string, redact: Redact): { message?: string; requestId?: string } {
  const field = (v: unknown) => (typeof v === 'string' ? shorten(redact(oneLine(v)), 200) : undefined);
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; request_id?: unknown } };
    return { message: field(body?.error?.message), requestId: field(body?.error?.request_id) };
  } catch {
    return { message: text.trim() ? `(not JSON: ${preview(redact(oneLine(text)))})` : undefined };
  }
}

/** The text on one line: runs of white space as one space. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The start of a redacted body, quoted. */
function preview(text: Redacted): string {
  return JSON.stringify(shorten(text, 60));
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  429: 'Too many requests',
  500: 'Internal server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  504: 'Gateway timeout',
};

function statusText(status: number): string {
  return STATUS_TEXT[status] ?? 'error';
}
