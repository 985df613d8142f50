/**
 * The service's HTTP client: undici `request` over one keep-alive pool, bearer auth, no redirects,
 * a cap on body size, a timeout over the whole request (headers and body), the shared request
 * budget and the retry policy. Every error names the request, never the key; what a failed
 * attempt is reported as (a status, a connection refused, TLS spoken where HTTP was expected) is
 * api/failures.ts's.
 *
 * Over 250 lines on purpose: one request's life reads top to bottom here (budget, attempt, body cap,
 * timeout, the answer or its failure, retry).
 */
import type { Dispatcher } from 'undici';
import { type Clock, MAX_TIMER_MS, realClock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { keyFingerprint } from '../core/fingerprint.js';
import { parseJsonBytes } from '../core/json-bytes.js';
import { type Redact, redactor, shorten } from '../core/redact.js';
import type { Endpoint, ReportType } from '../core/types.js';
import { AbortedError, ApiError, type RequestInfo } from '../errors.js';
import { type Answer, type Exchange, type ExchangeStage, exchange } from './body.js';
import type { RequestBudget } from './budget.js';
import { nextCampaignStep, parseCampaignPage, redactCampaign } from './campaign-list.js';
import { createRoute } from './dispatcher.js';
import { type Campaign, formatIssues, type Page, toPage } from './envelopes.js';
import { closedSilently, FailureExplainer } from './failures.js';
import { rateAdvice } from './rate-advice.js';
import { retryDecision } from './retry.js';

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
  /**
   * When this client's requests were answered (2xx), oldest first, no more than the budget allows in
   * a window: a 429's advice counts those within the window before it (api/rate-advice.ts).
   */
  private readonly answeredAt: number[] = [];
  /** Whether the 429 advice was given (a warning, once per client). */
  private advised = false;
  private readonly events: RunEvents | undefined;
  /** Whether any request got a 2xx answer: until one has, a 404 says more of the base URL (api/failures.ts). */
  private answered = false;
  /** What a failed attempt is reported as (api/failures.ts). */
  private readonly failures: FailureExplainer;

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
    this.headers = { authorization: `Bearer ${config.apiKey}`, accept: 'application/json' };
    if (config.gzip) this.headers['accept-encoding'] = 'gzip';
    if (config.userAgent) this.headers['user-agent'] = config.userAgent;
    this.basePath = config.baseUrl.pathname.replace(/\/+$/, '');
    this.origin = config.baseUrl.origin;
    this.redact = redactor(config.apiKey);
    this.failures = new FailureExplainer({
      baseUrl: config.baseUrl,
      baseUrlWhere: config.baseUrlWhere,
      timeoutMs: config.timeoutMs,
      // For error messages, never with its password.
      proxy: route.proxy,
      redact: this.redact,
      clock: this.clock,
      signal: opts.signal,
    });
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

  /** The limit the request budget keeps to (api/budget.ts keptRate): the key's processes' stricter one, else --rate-limit. */
  get budgetRate(): RequestBudget['rate'] {
    return this.opts.budget.keptRate;
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
        this.answeredAt.push(this.clock.now());
        if (this.answeredAt.length > this.opts.budget.rate.count) this.answeredAt.shift();
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
          // The event names the request and its request_id already.
          error: err instanceof ApiError ? err.reason : (err as Error).message,
        });
        if (err instanceof AbortedError) throw err;
        const decision = retryDecision(
          err,
          attempt,
          { ...this.opts.retry, maxRetries: this.config.maxRetries, maxRetryAfterMs: this.config.maxRetryWaitMs },
          this.opts.random,
        );
        // A 429 from a service stricter than the budget: say what to set, once (or on the error, if it ends the request).
        const advice = err instanceof ApiError && err.status === 429 ? this.rateAdvice(err) : undefined;
        if (!decision.retry) {
          // Why we stopped belongs on the one line the user reads; the error keeps its class, status and code.
          if (decision.reason && err instanceof ApiError) err.addReason(decision.reason);
          else if (decision.reason && err instanceof Error) err.message = `${err.message}; ${decision.reason}`;
          if (advice !== undefined && err instanceof ApiError) err.addReason(advice);
          throw err;
        }
        if (advice !== undefined && !this.advised) {
          this.advised = true;
          this.events?.warning?.(advice);
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

  /** The budget to set after a 429 (api/rate-advice.ts), if the 429 says enough to name one. */
  private rateAdvice(err: ApiError): string | undefined {
    const rate = this.opts.budget.rate;
    const since = this.clock.now() - rate.windowMs;
    const answered = this.answeredAt.filter((t) => t > since).length;
    return rateAdvice(rate, err.statedLimit, answered, err.retryAfterMs);
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
      throw this.failures.exchangeFailed(err, info, false);
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
      failure = withReceived(err instanceof ApiError ? err : this.failures.exchangeFailed(err, info, timedOut), receivedIn(pending));
    } finally {
      clearTimeout(timer);
      this.opts.signal?.removeEventListener('abort', onAbort);
      this.inFlight.delete(pending.answer);
    }
    if (failure !== undefined) throw await this.tlsInstead(failure, info);
    return this.response(answer, info, path);
  }

  /**
   * A plain-http request closed before any byte of an answer, to a port that speaks TLS, fails as
   * that (api/failures.ts asks), with what the attempt had received; any other failure as it is.
   */
  private async tlsInstead(failure: Error, info: RequestInfo): Promise<Error> {
    if (!closedSilently(failure)) return failure;
    const tls = await this.failures.tlsPort(failure, info);
    return tls === undefined ? failure : withReceived(tls, receivedBy.get(failure));
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
    throw withReceived(this.failures.answerError(answer, info, path, this.answered), {
      bytes: wireBytes,
      skipped: false,
      stage: 'answered',
      status: answer.status,
    });
  }
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
