/**
 * The Prometheus metrics of watch (`--metrics-listen`) and of pull (`--metrics-file`), on a private
 * Registry: fed by the run's events (requests, retries, 429s, budget waits) and by each pass's result
 * and the streams' checkpoints. Names follow Prometheus conventions: the campaign_sync_ prefix, _total
 * for counters, _seconds for time. Label values are bounded: the endpoint is the path without ids
 * (ids travel in the query), and streams are as many as the campaigns.
 *
 * Every stream the service lists has a health sample and both times from its first pass on, a
 * stream that never succeeded too (its last success is 0, so `time() - last_success > X` holds for
 * it): an alert on them fires for a stream that has failed since it began, not only for one that
 * stopped. Counters count this process's work; pull --metrics-file shows instead the totals the
 * mirror keeps across runs (showTotals), a cron pull being a new process each time.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { RunEvents } from '../core/events.js';
import { exitCodeForPass } from '../errors.js';
import type { CounterValue, StreamRow } from '../store/port.js';
import type { PassResult } from '../sync/pass.js';

const STREAM_LABELS = ['stream', 'campaign_id', 'endpoint', 'report_type'] as const;

export class SyncMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'campaign_sync_requests_total',
    help: 'HTTP attempts to the service, retries included, by endpoint and status (error: no status)',
    labelNames: ['endpoint', 'status'] as const,
    registers: [this.registry],
  });
  private readonly retries = new Counter({
    name: 'campaign_sync_retries_total',
    help: 'Retries, by the status that caused them (network: no answer)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: 'campaign_sync_rate_limited_total',
    help: '429 answers from the service',
    registers: [this.registry],
  });
  private readonly budgetWait = new Counter({
    name: 'campaign_sync_budget_wait_seconds_total',
    help: 'Time requests spent waiting for the request budget or a 429 pause',
    registers: [this.registry],
  });
  private readonly records = new Counter({
    name: 'campaign_sync_records_written_total',
    help: 'Records written to the mirror, by stream',
    labelNames: STREAM_LABELS,
    registers: [this.registry],
  });
  private readonly lastSuccess = new Gauge({
    name: 'campaign_sync_last_success_timestamp_seconds',
    help: "Unix time of the stream's last successful sync (0: it has never succeeded)",
    labelNames: STREAM_LABELS,
    registers: [this.registry],
  });
  private readonly lastAttempt = new Gauge({
    name: 'campaign_sync_last_attempt_timestamp_seconds',
    help: "Unix time the stream's last sync ended, successful or not (0: none has ended)",
    labelNames: STREAM_LABELS,
    registers: [this.registry],
  });
  private readonly healthy = new Gauge({
    name: 'campaign_sync_stream_healthy',
    help: "1 when the stream's last sync succeeded, 0 when it failed or none has succeeded",
    labelNames: STREAM_LABELS,
    registers: [this.registry],
  });
  private readonly passDuration = new Gauge({
    name: 'campaign_sync_pass_duration_seconds',
    help: 'Duration of the last pass',
    registers: [this.registry],
  });
  private readonly passes = new Counter({
    name: 'campaign_sync_passes_total',
    help: 'Passes, by result (ok, partial: some streams failed, failed: nothing synced)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly lastPassExit = new Gauge({
    name: 'campaign_sync_last_pass_exit_code',
    help: 'Exit code the last pass would have had as a pull (0 ok, 4 partial, 5 service unavailable)',
    registers: [this.registry],
  });

  /** The listeners that count requests, retries, 429s and budget waits. */
  events(): RunEvents {
    return {
      request: (e) => {
        this.requests.inc({ endpoint: e.path, status: e.status === undefined ? 'error' : String(e.status) });
        if (e.status === 429) this.rateLimited.inc();
      },
      retry: (e) => this.retries.inc({ reason: e.status === undefined ? 'network' : String(e.status) }),
      budgetWait: (e) => this.budgetWait.inc(e.ms / 1000),
    };
  }

  /** After a pass: its duration and result, records per stream, and every stream's last success. */
  pass(result: PassResult, rows: readonly StreamRow[]): void {
    this.passDuration.set(result.durationMs / 1000);
    const code = exitCodeForPass(result);
    this.lastPassExit.set(code);
    this.passes.inc({ result: code === 0 ? 'ok' : 'partial' });
    for (const s of result.streams) {
      const labels = { stream: s.id.key, campaign_id: s.id.campaignId, endpoint: s.id.endpoint, report_type: s.id.reportType ?? '' };
      this.records.inc(labels, s.records + (s.lookback?.records ?? 0));
    }
    this.streams(rows);
  }

  /** A pass that synced nothing (the service down): counted, with its exit code. */
  failedPass(durationMs: number, exitCode: number): void {
    this.passDuration.set(durationMs / 1000);
    this.lastPassExit.set(exitCode);
    this.passes.inc({ result: 'failed' });
  }

  /**
   * Every listed stream's health, last attempt and last success, from the checkpoints. A campaign the
   * service no longer lists, or one retired by a change of type, is not synced any more: its samples
   * go (its alerts resolve), as `status --check` leaves it out.
   */
  streams(rows: readonly StreamRow[]): void {
    for (const gauge of [this.healthy, this.lastAttempt, this.lastSuccess]) gauge.reset();
    for (const r of rows) {
      if (r.unlisted_since !== null || r.type_changed_to !== null) continue;
      const labels = { stream: r.stream, campaign_id: r.campaign_id, endpoint: r.endpoint, report_type: r.report_type ?? '' };
      // A success clears the error and its time: the attempt that ended last is the error's, if any.
      const attempt = r.last_error_at ?? r.last_success_at;
      this.healthy.set(labels, r.last_error === null && r.last_success_at !== null ? 1 : 0);
      this.lastAttempt.set(labels, attempt === null ? 0 : Date.parse(attempt) / 1000);
      this.lastSuccess.set(labels, r.last_success_at === null ? 0 : Date.parse(r.last_success_at) / 1000);
    }
  }

  /** What the counters counted in this process, each set of labels once (none at 0). */
  async counts(): Promise<CounterValue[]> {
    const out: CounterValue[] = [];
    for (const metric of await this.registry.getMetricsAsJSON()) {
      if (String(metric.type) !== 'counter') continue;
      for (const v of metric.values) {
        if (v.value === 0) continue;
        const labels = Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, String(l)]));
        out.push({ name: metric.name, labels, value: v.value });
      }
    }
    return out;
  }

  /**
   * Shows `totals` (this run's counts included) instead of this process's counts. A total whose name
   * or labels these counters do not have (kept by another release) is left out.
   */
  showTotals(totals: readonly CounterValue[]): void {
    for (const metric of this.registry.getMetricsAsArray()) if (metric instanceof Counter) metric.reset();
    for (const t of totals) {
      const counter = this.registry.getSingleMetric(t.name);
      if (!(counter instanceof Counter)) continue;
      try {
        counter.inc(t.labels, t.value);
      } catch {
        // Labels this release does not give that metric: not shown.
      }
    }
  }
}
