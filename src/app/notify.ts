/**
 * `--notify <url>` (pull, watch): after each pass, one JSON POST per stream whose state changed since
 * the state last delivered (sync/alerts.ts), never one per pass. A delivery is retried a few times
 * with backoff within the pass; one that still fails is warned about and leaves the state unrecorded,
 * so the next pass sends it again; it never fails the sync. Once one delivery has failed, the pass
 * sends no more (a webhook that is down must not hold a pass for minutes per stream). Redirects are
 * not followed. The document holds no key and no database password: the client redacts the key from
 * the errors it stores, and every secret the run knows is cut out of the document again here.
 */

import { createRoute } from '../api/dispatcher.js';
import { currentClock, currentIo } from '../core/io.js';
import { userAgent } from '../core/version.js';
import type { JobStore, StreamRow } from '../store/port.js';
import { requestIdOf, type StateChange, stateChanges } from '../sync/alerts.js';
import type { PassResult } from '../sync/pass.js';

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
}

const DEFAULTS = { timeoutMs: 10_000, retries: 3, backoffMs: 500 };

/** The JSON document of one state change. */
export function alertDocument(change: StateChange, names: ReadonlyMap<string, string>, result: PassResult | undefined, at: string) {
  const row: StreamRow = change.row;
  const walked = result?.streams.find((s) => s.id.key === row.stream);
  return {
    type: 'campaign-sync.stream_state',
    at,
    stream: row.stream,
    campaign_id: row.campaign_id,
    campaign_name: names.get(row.campaign_id) ?? null,
    endpoint: row.endpoint,
    report_type: row.report_type,
    state: change.state,
    previous_state: change.previous,
    error: change.record === 'failing' ? row.last_error : null,
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

export class Notifier {
  private readonly o: Required<Omit<NotifyOptions, 'secrets' | 'warn' | 'now'>> & Pick<NotifyOptions, 'warn' | 'now'>;
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
      warn: opts.warn,
    };
    this.secrets = (opts.secrets ?? []).filter((s) => s.length >= 4);
  }

  /** After a pass (`result`, or none when it synced nothing): tells every state change, records what was delivered. */
  async afterPass(store: JobStore, result: PassResult | undefined, maxAgeMs: number): Promise<void> {
    const now = this.o.now?.() ?? (await store.now());
    const changes = stateChanges(await store.streams(), await store.notified(), now, maxAgeMs);
    if (changes.length === 0) return;
    const names = await store.campaignNames();
    const at = new Date(now).toISOString();
    for (const change of changes) {
      const problem = await this.deliver(alertDocument(change, names, result, at));
      if (problem !== undefined) {
        this.o.warn?.(
          `--notify: could not tell ${this.url.origin} that stream ${change.row.stream} is ${change.state} (${problem}); it is sent again at the next pass`,
        );
        return;
      }
      await store.setNotified(change.row.stream, change.record);
    }
  }

  /** POSTs one document, retrying; undefined once delivered, else why not. */
  private async deliver(document: object): Promise<string | undefined> {
    let body = JSON.stringify(document);
    for (const secret of this.secrets) body = body.split(secret).join('[redacted]');
    let problem = '';
    for (let attempt = 0; attempt <= this.o.retries; attempt++) {
      if (attempt > 0) await this.o.sleep(this.o.backoffMs * 2 ** (attempt - 1));
      const answer = await this.post(body);
      if (answer.ok) return undefined;
      problem = answer.problem;
      if (!answer.retry) break;
    }
    return problem;
  }

  private async post(body: string): Promise<{ ok: true } | { ok: false; problem: string; retry: boolean }> {
    // Loaded with the first alert: the whole of undici costs a pull's start-up a third of its time.
    const { request } = await import('undici');
    this.route ??= createRoute(this.url, currentIo().env, this.o.timeoutMs);
    try {
      const res = await request(this.url, {
        method: 'POST',
        dispatcher: this.route.dispatcher,
        headers: { 'content-type': 'application/json', 'user-agent': userAgent() },
        body,
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      await res.body.dump();
      const status = res.statusCode;
      if (status >= 200 && status < 300) return { ok: true };
      // A redirect is not followed (the document would go where the URL does not say): fix the URL.
      const retry = status === 408 || status === 429 || status >= 500;
      return { ok: false, problem: `HTTP ${status}${status >= 300 && status < 400 ? ', a redirect, not followed' : ''}`, retry };
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { ok: false, problem: code ?? (err as Error).name ?? 'failed', retry: true };
    }
  }

  async close(): Promise<void> {
    await this.route?.dispatcher.close();
  }
}
