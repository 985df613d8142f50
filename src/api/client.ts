/**
 * The service's HTTP client: undici `request` over one keep-alive pool, bearer auth, no redirects,
 * a cap on body size, a timeout over the whole request (headers and body), the shared request
 * budget and the retry policy. Every error names the request, never the key.
 *
 * Over 250 lines on purpose: one request's life reads top to bottom here (budget, attempt, body cap,
 * timeout, status -> error). The error-body helpers at the end are the first to move out when the
 * request log or compression adds to it.
 */
import type { Dispatcher } from 'undici';
import { type Clock, MAX_TIMER_MS, realClock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { keyFingerprint } from '../core/fingerprint.js';
import { parseJsonBytes } from '../core/json-bytes.js';
import { type Redact, type Redacted, redactor, shorten } from '../core/redact.js';
import type { Endpoint, ReportType } from '../core/types.js';
import { AbortedError, ApiError, AuthError, NetworkError, type RequestInfo } from '../errors.js';
import { type Answer, type Exchange, type ExchangeStage, exchange } from './body.js';
import type { RequestBudget } from './budget.js';
import { nextCampaignStep, parseCampaignPage, redactCampaign } from './campaign-list.js';
import { createRoute } from './dispatcher.js';
import { type Campaign, formatIssues, type Page, toPage } from './envelopes.js';
import { NOT_TLS, PROXY_NOT_TLS, parseRetryAfter, retryDecision, TLS_PORT } from './retry.js';
import { speaksTls } from './tls-probe.js';

/** 64 MiB: a page of 100 DETAILED records is well under 1 MiB; more means something is wrong. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface PageQuery {
  endpoint: Endpoint;
  campaignId: string;
  limit: number;
  reportType?: ReportType | undefined;
  startingAfter?: bigint | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
}

/** Counts requests (attempts included) for one stream's summary. */
export interface RequestCounter {
  requests: number;
  bytes: number;
}

/** What the client needs to reach the service (built from the config by app/client.ts). */
export interface ClientConfig {
  /** The `{base_url}` of the spec, without /v1. */
  baseUrl: URL;
  /** What set it, for the errors that say to check it (default `--base-url`). */
  baseUrlWhere?: string | undefined;
  apiKey: string;
  /** Bound on each whole request, body included. */
  timeoutMs: number;
  maxRetries: number;
  /** Longest Retry-After honoured; a longer one fails the request at once. */
  maxRetryWaitMs: number;
  /** Send `Accept-Encoding: gzip` (config.ts decides from --compression and the host). */
  gzip?: boolean | undefined;
  /** Sent on every request (core/version.ts); app/client.ts sets it. */
  userAgent?: string | undefined;
}

export interface ClientOptions {
  budget: RequestBudget;
  signal?: AbortSignal | undefined;
  clock?: Clock;
  /** undici dispatcher; tests pass a MockAgent. Default: api/dispatcher.ts (a keep-alive Pool, or the proxy). */
  dispatcher?: Dispatcher;
  /** The environment the proxy variables are read from (default: the run's, core/io.ts). */
  env?: NodeJS.ProcessEnv;
  maxBodyBytes?: number;
  random?: () => number;
  /** Requests, retries and budget waits are reported here (core/events.ts). */
  events?: RunEvents | undefined;
  /** Called once the client is closed (app/client.ts closes the budget's store, once its ends are written). */
  onClose?: () => void | Promise<void>;
  /** Backoff steps (default 500 ms doubling to 30 s); tests shorten them so a faulty service takes seconds, not minutes. */
  retry?: { baseMs?: number; capMs?: number };
}

/** A request's facts for its event; the query and campaign id may carry the service's own text (a cursor, an id). */
function requestFacts(
  redact: Redact,
  info: RequestInfo,
  query: string,
  attempt: number,
  maxAttempts: number,
  sentAt: number,
  endedAt: number,
) {
  return {
    method: info.method,
    path: info.path,
    query: redact(query),
    campaignId: info.campaignId === undefined ? undefined : redact(info.campaignId),
    attempt: attempt + 1,
    maxAttempts,
    ms: endedAt - sentAt,
  };
}

interface Response {
  value: unknown;
  bytes: number;
  status: number;
  /** The body as received (inflated): a quarantined record's text is cut from it (sync/quarantine.ts recordTexts). */
  body: Buffer;
  /** The answer's `x-request-id` header, when it sent one (without the key, cut to 200 characters). */
  requestId: string | undefined;
}

/** What a results page's answer carries beside the page. */
export interface PageAnswer {
  page: Page;
  bytes: number;
  /** The body as received (inflated), to cut a record's text exactly as sent from it. */
  body: Buffer;
  requestId: string | undefined;
}

export class ApiClient {
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  /** The proxy requests go through, for error messages (never with its password). */
  private readonly proxy: string | undefined;
  private readonly headers: Record<string, string>;
  private readonly clock: Clock;
  private readonly basePath: string;
  private readonly origin: string;
  /** Every attempt made, retries included. */
  requests = 0;
  /**
   * The text with the key taken out (core/redact.ts): a service (or something posing as one) may echo
   * the key it was sent in an error message, a request id, a cursor or a body, and every such string
   * reaches the terminal, the request log, `last_error` in the mirror and /healthz.
   */
  readonly redact: Redact;
  /** The answers of the attempts under way, for close(). */
  private readonly inFlight = new Set<Promise<Answer>>();
  /** Set by close(): a request whose slot came after it (a budget on a server answers later) is not sent. */
  private closing = false;
  private readonly events: RunEvents | undefined;
  /** Whether any request got a 2xx answer: until one has, a 404 says more of the base URL (answerError). */
  private answered = false;
  /** Whether the plain-http base URL's port speaks TLS, once asked (see tlsInstead). */
  private tlsProbe: Promise<boolean> | undefined;

  constructor(
    readonly config: ClientConfig,
    private readonly opts: ClientOptions,
  ) {
    this.clock = opts.clock ?? realClock;
    this.events = opts.events;
    this.ownsDispatcher = opts.dispatcher === undefined;
    const route = opts.dispatcher
      ? { dispatcher: opts.dispatcher, proxy: undefined }
      : createRoute(config.baseUrl, opts.env, config.timeoutMs);
    this.dispatcher = route.dispatcher;
    this.proxy = route.proxy;
    this.headers = { authorization: `Bearer ${config.apiKey}`, accept: 'application/json' };
    if (config.gzip) this.headers['accept-encoding'] = 'gzip';
    if (config.userAgent) this.headers['user-agent'] = config.userAgent;
    this.basePath = config.baseUrl.pathname.replace(/\/+$/, '');
    this.origin = config.baseUrl.origin;
    this.redact = redactor(config.apiKey);
  }

  /**
   * Who lists campaigns through this client: the service and key, as a fingerprint (the key cannot
   * be recovered from it). A mirror keeps each one's newest list (store/sqlite/checkpoints.ts, listings).
   */
  get lister(): string {
    return keyFingerprint('campaign-list', this.config.baseUrl.href, this.config.apiKey);
  }

  /** The same error, its message without the key (see `redact`); rethrown by every public method. */
  private redacted(err: unknown): unknown {
    if (err instanceof Error) err.message = this.redact(err.message);
    return err;
  }

  /**
   * Lets the attempts under way end (each within --timeout, at once after a signal), then destroys the
   * connections. Not undici's close(): it also waits for requests we gave up on before they connected,
   * which nobody awaits any more (a proxy silent on CONNECT holds one ~300 s, a SYN never answered ~10 s).
   */
  async close(): Promise<void> {
    this.closing = true;
    try {
      await Promise.allSettled(this.inFlight);
      if (this.ownsDispatcher) await this.dispatcher.destroy();
    } finally {
      await this.opts.onClose?.();
    }
  }

  /**
   * GET /v1/campaigns, every page of it (api/campaign-list.ts decides what follows a page). A
   * campaign listed twice is kept once, as first listed.
   */
  async listCampaigns(counter?: RequestCounter): Promise<Campaign[]> {
    const info: RequestInfo = { method: 'GET', path: '/v1/campaigns' };
    const out: Campaign[] = [];
    const ids = new Set<string>();
    const sent = new Set<string>();
    let query = '';
    for (let n = 1; ; n++) {
      const { value } = await this.get(info, query, counter);
      let step: ReturnType<typeof nextCampaignStep>;
      try {
        const page = parseCampaignPage(value, info);
        for (const listed of page.campaigns) {
          if (ids.has(listed.id)) continue;
          ids.add(listed.id);
          const c = redactCampaign(listed, this.redact);
          if (c) out.push(c);
          else this.events?.warning?.('the service listed a campaign whose id holds the API key: left out');
        }
        step = nextCampaignStep(page, { info, page: n, sent });
      } catch (err) {
        // The answer's own values may be quoted: never the key among them.
        throw this.redacted(err);
      }
      if (step.done) return out;
      sent.add(step.next);
      query = `?${new URLSearchParams({ starting_after: step.next })}`;
    }
  }

  /** One page of results, in ascending order. */
  async resultsPage(q: PageQuery, counter?: RequestCounter): Promise<PageAnswer> {
    const info: RequestInfo = { method: 'GET', path: `/v1/campaigns/${q.endpoint}/results`, campaignId: q.campaignId };
    const params = new URLSearchParams({ campaign_id: q.campaignId, sort: 'asc', limit: String(q.limit) });
    if (q.endpoint === 'role' && q.reportType) params.set('report_type', q.reportType);
    if (q.startingAfter !== undefined) params.set('starting_after', q.startingAfter.toString());
    if (q.startDate) params.set('start_date', q.startDate);
    if (q.endDate) params.set('end_date', q.endDate);
    const { value, bytes, body, requestId } = await this.get(info, `?${params}`, counter);
    const parsed = toPage(value);
    if (!parsed.success) throw this.redacted(new ApiError(info, `unexpected page: ${formatIssues(parsed.error)}`, { invalid: true }));
    return { page: parsed.data, bytes, body, requestId };
  }

  /** One logical GET: budget, attempt, and retries by the policy. */
  private async get(info: RequestInfo, query: string, counter?: RequestCounter): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      if (this.opts.signal?.aborted) throw new AbortedError();
      // No await before the request is sent when a slot is free: see RequestBudget.tryAcquire.
      let release = this.opts.budget.tryAcquire();
      let budgetWaitMs = 0;
      if (release === undefined) {
        const waitFrom = this.clock.now();
        this.events?.budgetWaitStart?.({ ms: this.opts.budget.waitEstimate() });
        release = await this.opts.budget.acquire(this.opts.signal);
        if (this.closing) {
          release();
          throw new AbortedError();
        }
        budgetWaitMs = this.clock.now() - waitFrom;
        this.events?.budgetWait?.({ ms: budgetWaitMs });
      }
      this.requests++;
      if (counter) counter.requests++;
      const sentAt = this.clock.now();
      const maxAttempts = this.config.maxRetries + 1;
      try {
        const res = await this.once(info, query);
        release();
        if (counter) counter.bytes += res.bytes;
        this.events?.request?.({
          ...requestFacts(this.redact, info, query, attempt, maxAttempts, sentAt, this.clock.now()),
          status: res.status,
          bytes: res.bytes,
          budgetWaitMs,
        });
        return res;
      } catch (err) {
        const received = receivedBy.get(err as object);
        // Unanswered once sent (a timeout, an abort, a connection lost), the server may still count it
        // later; never sent, or answered (a cut body included), its end is now.
        release(received?.stage !== 'sent');
        this.redacted(err);
        // Still one request event: the log's lines and the summary's request count must agree.
        this.events?.request?.({
          ...requestFacts(this.redact, info, query, attempt, maxAttempts, sentAt, this.clock.now()),
          // The status that came, a body cut off after it included.
          status: received?.status || (err instanceof ApiError ? err.status : undefined),
          bytes: received?.bytes ?? 0,
          bodySkipped: received?.skipped,
          budgetWaitMs,
          requestId: err instanceof ApiError ? err.requestId : undefined,
          error: (err as Error).message,
        });
        if (err instanceof AbortedError) throw err;
        const decision = retryDecision(
          err,
          attempt,
          { ...this.opts.retry, maxRetries: this.config.maxRetries, maxRetryAfterMs: this.config.maxRetryWaitMs },
          this.opts.random,
        );
        if (!decision.retry) {
          // Why we stopped belongs on the one line the user reads; the error keeps its class, status and code.
          if (decision.reason && err instanceof Error) err.message = `${err.message}; ${decision.reason}`;
          throw err;
        }
        const delay = decision.delayMs;
        // A 429 means the server counts differently than we do: hold every stream back.
        if (err instanceof ApiError && err.status === 429) this.opts.budget.pause(delay);
        this.events?.retry?.({
          error: err as Error,
          delayMs: delay,
          attempt: attempt + 1,
          maxAttempts,
          method: info.method,
          path: info.path,
          status: err instanceof ApiError ? err.status : undefined,
          retryAfter: err instanceof ApiError && err.retryAfterMs !== undefined,
        });
        await this.clock.sleep(delay, this.opts.signal);
      }
    }
  }

  /** One attempt: the exchange (api/body.ts), ended by the timeout or by the caller's signal. */
  private async once(info: RequestInfo, query: string): Promise<Response> {
    const path = `${this.basePath}${info.path}${query}`;
    const maxBytes = this.opts.maxBodyBytes ?? MAX_BODY_BYTES;
    let timedOut = false;
    let failure: Error | undefined;
    let pending: Exchange;
    try {
      pending = exchange(this.dispatcher, { origin: this.origin, path, headers: this.headers, maxBytes, redact: this.redact }, info);
    } catch (err) {
      throw this.failed(err, info, false);
    }
    // One timer per attempt over the whole exchange, and the caller's signal unhooked when it ends:
    // a watch that runs for weeks accumulates nothing. A --timeout past a timer's longest delay
    // (24.8 days) means "never", not 1 ms.
    const timer = setTimeout(
      () => {
        timedOut = true;
        pending.cancel(new Error('timed out'));
      },
      Math.min(this.config.timeoutMs, MAX_TIMER_MS),
    );
    const onAbort = () => pending.cancel(new Error('aborted'));
    this.opts.signal?.addEventListener('abort', onAbort, { once: true });
    this.inFlight.add(pending.answer);
    let answer!: Answer;
    try {
      answer = await pending.answer;
    } catch (err) {
      failure = withReceived(err instanceof ApiError ? err : this.failed(err, info, timedOut), receivedIn(pending));
    } finally {
      clearTimeout(timer);
      this.opts.signal?.removeEventListener('abort', onAbort);
      this.inFlight.delete(pending.answer);
    }
    if (failure !== undefined) throw closedSilently(failure) ? await this.tlsInstead(failure, info) : failure;
    return this.response(answer, info, path);
  }

  /**
   * A plain-http request closed before any byte of an answer: when the port completes a TLS handshake
   * (api/tls-probe.ts, asked once per client), the error says it speaks TLS, and is not retried.
   */
  private async tlsInstead(failure: Error, info: RequestInfo): Promise<Error> {
    if (this.proxy !== undefined || this.config.baseUrl.protocol !== 'http:') return failure;
    this.tlsProbe ??= speaksTls(this.config.baseUrl, Math.min(this.config.timeoutMs, TLS_PROBE_MS), this.opts.signal);
    if (!(await this.tlsProbe)) return failure;
    const where = this.config.baseUrl.host;
    return withReceived(
      new NetworkError(info, TLS_PORT, `${where} closed the connection without an HTTP answer, and it speaks TLS there`, failure),
      receivedBy.get(failure),
    );
  }

  /** The error a failed exchange is reported as. */
  private failed(err: unknown, info: RequestInfo, timedOut: boolean): Error {
    if (this.opts.signal?.aborted) return new AbortedError();
    if (timedOut) return new NetworkError(info, 'TIMEOUT', `no complete answer within ${this.config.timeoutMs} ms`, err);
    const code = (err as { code?: string }).code ?? 'ERROR';
    const message = opensslReason(String((err as Error).message ?? err));
    const where = this.config.baseUrl.host;
    if (NOT_TLS.test(code) && this.proxy?.startsWith('https://')) {
      return new NetworkError(
        info,
        PROXY_NOT_TLS,
        `${code}: the proxy ${this.proxy} or ${where} behind it answered, but not in TLS (${message})`,
        err,
      );
    }
    if (NOT_TLS.test(code)) {
      return new NetworkError(info, code, `${code}: ${where} answered, but not in TLS (${message})${this.via()}`, err);
    }
    if (this.proxy === undefined && tlsRecord(err)) {
      return new NetworkError(info, TLS_PORT, `${where} answered with TLS, not HTTP (${message}): it speaks TLS there`, err);
    }
    if (this.proxy === undefined && code === 'ECONNREFUSED') {
      return new NetworkError(
        info,
        code,
        `${code}: nothing listens at ${this.baseText()} (connection refused): check ${this.baseWhere()}`,
        err,
      );
    }
    if (this.proxy === undefined) return new NetworkError(info, code, `${code}: ${message}`, err);
    const refused = /^Proxy response \((\d+)\)/.exec(message);
    if (refused) return new NetworkError(info, `PROXY_${refused[1]}`, `proxy ${this.proxy} answered ${refused[1]} to CONNECT`, err);
    return new NetworkError(info, code, `${code}: ${message}${this.via()}`, err);
  }

  /** The base URL as the user gave it (credentials are refused in it, config.ts). */
  private baseText(): string {
    return `${this.origin}${this.basePath}`;
  }

  private baseWhere(): string {
    return this.config.baseUrlWhere ?? '--base-url';
  }

  private via(): string {
    return this.proxy === undefined ? '' : ` (through proxy ${this.proxy})`;
  }

  /** A whole answer: its value, or the error its status means. */
  private response(answer: Answer, info: RequestInfo, path: string): Response {
    const { status, body, wireBytes } = answer;
    if (status >= 200 && status < 300) {
      this.answered = true;
      try {
        const id = answer.headers['x-request-id'];
        const requestId = typeof id === 'string' && id !== '' ? shorten(this.redact(id), 200) : undefined;
        return { value: parseJsonBytes(body), bytes: wireBytes, status, body, requestId };
      } catch {}
    }
    // The body was read whole: the request log gives its size, not 0 B.
    throw withReceived(this.answerError(answer, info, path), {
      bytes: wireBytes,
      skipped: false,
      stage: 'answered',
      status: answer.status,
    });
  }

  /** The error an answer that is not a page of JSON means: not JSON, a redirect, an error status. */
  private answerError(answer: Answer, info: RequestInfo, path: string): Error {
    const { status, headers: resHeaders, body } = answer;
    if (status >= 200 && status < 300) {
      const text = this.redact(oneLine(body.toString('utf8')));
      const type = this.redact(String(resHeaders['content-type'] ?? 'no content-type').split(';')[0] ?? '');
      return new ApiError(info, `${status} but the body is not JSON (${type}): ${preview(text)}`, { invalid: true });
    }
    if (status >= 300 && status < 400) {
      const location = String(resHeaders.location ?? '');
      let where = 'elsewhere';
      try {
        where = new URL(location, `${this.origin}${path}`).host;
      } catch {}
      return new ApiError(info, `${status} redirect to ${where} not followed (the key is only sent to the configured base URL)`, {
        status,
        invalid: true,
      });
    }
    const { message, requestId } = errorFields(body.toString('utf8'), this.redact);
    const retryAfterMs = parseRetryAfter(resHeaders['retry-after'], this.clock.now());
    let detail = `${status} ${message ?? statusText(status)}`;
    if (status === 400 && this.config.baseUrl.protocol === 'http:' && PLAIN_TO_TLS_PORT.test(body.toString('latin1'))) {
      detail += '; the port speaks HTTPS: use https:// in --base-url';
    }
    // Before any answer was found, a 404 is the service's root missed, not a campaign gone.
    if (status === 404 && !this.answered) {
      const hint = this.basePath
        ? `the path of ${this.baseWhere()} (${this.basePath}) is probably wrong`
        : `${this.baseWhere()} probably lacks the path the service lives under`;
      detail += `: nothing at ${this.baseText()}${info.path}; ${hint}: give the URL that /v1 hangs from`;
    }
    if (status === 401) {
      return new AuthError(info, `${detail} (check the API key: --api-key-file or CAMPAIGN_SYNC_API_KEY)`, { status, requestId });
    }
    return new ApiError(info, detail, { status, requestId, retryAfterMs });
  }
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
 * undici's "other side closed" on a connection that never received a byte: no keep-alive race (the
 * connection had answered before), but a server that hung up on the request itself.
 */
function closedSilently(err: Error): boolean {
  const cause = err.cause as { code?: unknown; socket?: { bytesRead?: unknown } } | undefined;
  return err instanceof NetworkError && cause?.code === 'UND_ERR_SOCKET' && cause.socket?.bytesRead === 0;
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
 * What a failed attempt had received (an error status's body, a body cut off at the cap or by a lost
 * connection, the status before it) and how far it got, for its request event and its budget slot.
 * Kept beside the error, not in it: set on failures only, nothing per page. An error without it was
 * thrown before the exchange started: never sent.
 */
interface Received {
  bytes: number;
  skipped: boolean;
  stage: ExchangeStage;
  /** 0: no status came. */
  status: number;
}

const receivedBy = new WeakMap<object, Received>();

function withReceived(err: Error, received: Received | undefined): Error {
  if (received !== undefined) receivedBy.set(err, received);
  return err;
}

function receivedIn(pending: Exchange): Received {
  return { bytes: pending.received(), skipped: pending.skipped(), stage: pending.stage(), status: pending.status };
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
