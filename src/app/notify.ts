/**
 * `--notify <url>` (pull, watch): after each pass, one JSON POST per stream whose state changed since
 * the state last delivered (sync/alerts.ts), never one per pass. A delivery is retried a few times
 * with backoff within the pass; one that still fails is warned about and leaves the state unrecorded,
 * so the next pass sends it again; it never fails the sync. Once one delivery has failed, the pass
 * sends no more (a webhook that is down must not hold a pass for minutes per stream). Redirects are
 * not followed.
 *
 * What a receiver can trust: the document holds no key and no database password (every secret the
 * run knows is cut out of it again here) and no personal data (a delivered alert cannot be called
 * back by `forget`, so e-mails and user ids quoted in an error are masked: core/personal.ts); with a
 * secret, each POST is signed as GitHub signs its webhooks, an HMAC-SHA256 of the exact body bytes in
 * `X-Campaign-Sync-Signature-256: sha256=<hex>`. A `text` member says it all in one line, which
 * Slack's and Teams' incoming webhooks show as the message.
 */

import { createHmac, randomUUID } from 'node:crypto';
import { createRoute } from '../api/dispatcher.js';
import { currentClock, currentIo } from '../core/io.js';
import { maskPersonal } from '../core/personal.js';
import { userAgent } from '../core/version.js';
import type { JobStore, StreamRow } from '../store/port.js';
import { requestIdOf, type StateChange, stateChanges } from '../sync/alerts.js';
import type { PassResult } from '../sync/pass.js';

/** The headers a receiver checks: the signature (with a secret), what the document is, and its delivery id (the same on every retry). */
export const SIGNATURE_HEADER = 'x-campaign-sync-signature-256';
export const EVENT_HEADER = 'x-campaign-sync-event';
export const DELIVERY_HEADER = 'x-campaign-sync-delivery';

/** `sha256=<hex>`: the signature of `body` with `secret`, as SIGNATURE_HEADER carries it. */
export function signature(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export interface NotifyOptions {
  /** Each POST's bound, connection to answer. */
  timeoutMs?: number;
  /** Retries of one delivery within the pass. */
  retries?: number;
  /** Backoff before the first retry, doubled at each. */
  backoffMs?: number;
  /** Strings that must never leave in a document (the API key, the database password). */
  secrets?: readonly string[];
  warn?: (text: string) => void;
  /** The backoff's wait. Default: the run's clock's (core/io.ts currentClock). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * When a stream goes stale, and a document's `at`. Default: the mirror's clock (JobStore.now: the
   * server's for a fleet), since the state delivered is kept in the mirror for every worker.
   */
  now?: () => number;
  /** Signs each POST (SIGNATURE_HEADER); none: unsigned. */
  secret?: string | undefined;
  /**
   * The bound of one POST as a signal (default: AbortSignal.timeout). A test ends a POST as a
   * timeout would, when its receiver has it, instead of waiting the 10 s out.
   */
  deadline?: (ms: number) => AbortSignal;
}

const DEFAULTS = { timeoutMs: 10_000, retries: 3, backoffMs: 500 };

/** `session` or `role DETAILED`, as the summary tables name a stream's kind. */
function kindOf(row: StreamRow): string {
  return row.endpoint === 'role' ? `role ${row.report_type ?? ''}`.trim() : 'session';
}

/** What a chat shows: the stream, its new state, and why, in one line (personal data already masked). */
function alertText(change: StateChange, name: string, error: string | null): string {
  const stream = `${name} (${kindOf(change.row)})`;
  switch (change.state) {
    case 'failing':
      return `campaign-sync: ${stream} is failing: ${error ?? 'no error recorded'}`;
    case 'stale':
      return `campaign-sync: ${stream} is stale: its last success was ${change.row.last_success_at ?? 'never'}`;
    case 'unlisted':
      return change.row.type_changed_to
        ? `campaign-sync: ${stream} is retired: the service lists the campaign as ${change.row.type_changed_to} now`
        : `campaign-sync: ${stream} is no longer listed by the service`;
    case 'recovered':
      return `campaign-sync: ${stream} recovered (was ${change.previous}); ${Number(change.row.records)} records stored`;
  }
}

/** The JSON document of one state change: no personal data (the error's e-mails and user ids masked). */
export function alertDocument(change: StateChange, names: ReadonlyMap<string, string>, result: PassResult | undefined, at: string) {
  const row: StreamRow = change.row;
  const walked = result?.streams.find((s) => s.id.key === row.stream);
  const name = names.get(row.campaign_id) ?? null;
  const error = change.record === 'failing' && row.last_error !== null ? maskPersonal(row.last_error) : null;
  return {
    type: 'campaign-sync.stream_state',
    at,
    text: alertText(change, name ?? row.campaign_id, error),
    stream: row.stream,
    campaign_id: row.campaign_id,
    campaign_name: name,
    endpoint: row.endpoint,
    report_type: row.report_type,
    state: change.state,
    // None for a stream that never succeeded and was never told: it was not `ok` before.
    previous_state: change.first ? null : change.previous,
    error,
    request_id: change.record === 'failing' ? requestIdOf(row.last_error) : null,
    last_success_at: row.last_success_at,
    last_error_at: row.last_error_at,
    unlisted_since: row.unlisted_since,
    counts: {
      stored: Number(row.records),
      new: walked?.inserted ?? 0,
      updated: walked?.updated ?? 0,
      pages: walked?.pages ?? 0,
      requests: walked?.requests ?? 0,
    },
  };
}

/** The document `notify-test` sends: it names no stream and changes no state. */
export function testDocument(at: string, host: string) {
  return {
    type: 'campaign-sync.test',
    at,
    text: `campaign-sync: a test notification from ${host}; stream state changes will arrive here`,
  };
}

/** How one delivery ended: delivered (problem undefined), or why not; `status` when the receiver answered. */
export interface Delivery {
  problem: string | undefined;
  status?: number | undefined;
}

/** `10 s`, `500 ms`: a bound as a message says it. */
function seconds(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}

/** Connection failures people meet, in words (the code after them). */
const NETWORK_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed',
};

/** undici's and the signal's ways of saying a POST ran out of time. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export class Notifier {
  private readonly o: Required<Omit<NotifyOptions, 'secrets' | 'warn' | 'secret' | 'now'>> & Pick<NotifyOptions, 'warn' | 'secret' | 'now'>;
  private readonly secrets: string[];
  private route: ReturnType<typeof createRoute> | undefined;

  constructor(
    private readonly url: URL,
    opts: NotifyOptions = {},
  ) {
    // The run's, taken here: a delivery's backoff waits on the clock a test gave the run.
    const clock = currentClock();
    this.o = {
      timeoutMs: opts.timeoutMs ?? DEFAULTS.timeoutMs,
      retries: opts.retries ?? DEFAULTS.retries,
      backoffMs: opts.backoffMs ?? DEFAULTS.backoffMs,
      sleep: opts.sleep ?? ((ms) => clock.sleep(ms)),
      now: opts.now,
      deadline: opts.deadline ?? ((ms) => AbortSignal.timeout(ms)),
      warn: opts.warn,
      secret: opts.secret,
    };
    // The signing secret never travels in a document either.
    this.secrets = [...(opts.secrets ?? []), ...(opts.secret === undefined ? [] : [opts.secret])].filter((s) => s.length >= 4);
  }

  /** After a pass (`result`, or none when it synced nothing): tells every state change, records what was delivered. */
  async afterPass(store: JobStore, result: PassResult | undefined, maxAgeMs: number): Promise<void> {
    const now = this.o.now?.() ?? (await store.now());
    const changes = stateChanges(await store.streams(), await store.notified(), now, maxAgeMs);
    if (changes.length === 0) return;
    const names = await store.campaignNames();
    const at = new Date(now).toISOString();
    for (const change of changes) {
      const { problem } = await this.deliver('stream_state', alertDocument(change, names, result, at));
      if (problem !== undefined) {
        const name = names.get(change.row.campaign_id) ?? change.row.campaign_id;
        this.o.warn?.(
          `--notify: could not tell ${this.url.origin} that stream ${name} (${kindOf(change.row)}) is ${change.state} (${problem}); it is sent again at the next pass`,
        );
        return;
      }
      await store.setNotified(change.row.stream, change.record);
    }
  }

  /** Sends `notify-test`'s document, retried as an alert is. */
  sendTest(host: string): Promise<Delivery> {
    return this.deliver('test', testDocument(new Date(this.o.now?.() ?? currentClock().now()).toISOString(), host));
  }

  /** POSTs one document, retrying; `problem` undefined once delivered, else why not. */
  private async deliver(event: string, document: object): Promise<Delivery> {
    let body = JSON.stringify(document);
    for (const secret of this.secrets) body = body.split(secret).join('[redacted]');
    // One id for every attempt: a receiver that got a first attempt whose answer was lost sees the retry as the same delivery.
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': userAgent(),
      [EVENT_HEADER]: event,
      [DELIVERY_HEADER]: randomUUID(),
    };
    if (this.o.secret !== undefined) headers[SIGNATURE_HEADER] = signature(this.o.secret, body);
    let last: Delivery = { problem: 'not sent' };
    for (let attempt = 0; attempt <= this.o.retries; attempt++) {
      if (attempt > 0) await this.o.sleep(this.o.backoffMs * 2 ** (attempt - 1));
      const answer = await this.post(body, headers);
      if (answer.ok) return { problem: undefined, status: answer.status };
      last = { problem: answer.problem, status: answer.status };
      if (!answer.retry) break;
    }
    return last;
  }

  private async post(
    body: string,
    headers: Record<string, string>,
  ): Promise<{ ok: true; status: number } | { ok: false; problem: string; retry: boolean; status?: number }> {
    // Loaded with the first alert: the whole of undici costs a pull's start-up a third of its time.
    const { request } = await import('undici');
    this.route ??= createRoute(this.url, currentIo().env, this.o.timeoutMs);
    try {
      const res = await request(this.url, {
        method: 'POST',
        dispatcher: this.route.dispatcher,
        headers,
        body,
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
        signal: this.o.deadline(this.o.timeoutMs),
      });
      await res.body.dump();
      const status = res.statusCode;
      if (status >= 200 && status < 300) return { ok: true, status };
      // A redirect is not followed (the document would go where the URL does not say): fix the URL.
      const retry = status === 408 || status === 429 || status >= 500;
      const redirect = status >= 300 && status < 400 ? ', a redirect, not followed' : '';
      return { ok: false, problem: `HTTP ${status}${redirect}`, retry, status };
    } catch (err) {
      return { ok: false, problem: this.failure(err), retry: true };
    }
  }

  /** Why a POST got no answer, in words: `timed out after 10 s`, `connection refused (ECONNREFUSED)`. */
  private failure(err: unknown): string {
    const code = (err as { code?: unknown }).code;
    const name = (err as { name?: unknown }).name;
    // AbortSignal.timeout's DOMException carries a numeric legacy code (23): its name says what happened.
    if (name === 'TimeoutError' || (typeof code === 'string' && TIMEOUT_CODES.has(code)))
      return `timed out after ${seconds(this.o.timeoutMs)}`;
    if (typeof code === 'string') return NETWORK_WORDS[code] === undefined ? code : `${NETWORK_WORDS[code]} (${code})`;
    return typeof name === 'string' && name !== 'Error' ? name : String((err as Error).message ?? 'failed');
  }

  async close(): Promise<void> {
    await this.route?.dispatcher.close();
  }
}
