/**
 * watch's Prometheus metrics, on a private Registry: fed by the run's events (requests,
 * retries, 429s, budget waits) and by each pass's result and the streams' checkpoints. Names follow
 * Prometheus conventions: the campaign_sync_ prefix, _total for counters, _seconds for time. Label
 * values are bounded: the endpoint is the path without ids (ids travel in the query), and streams
 * are as many as the campaigns.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { RunEvents } from '../core/events.js';
import { exitCodeForPass } from '../errors.js';
import type { StreamRow } from '../store/port.js';
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
    help: "Unix time of the stream's last successful sync",
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

  /** Every stream's last success, from the checkpoints. */
  streams(rows: readonly StreamRow[]): void {
    for (const r of rows) {
      if (r.last_success_at === null) continue;
      const labels = { stream: r.stream, campaign_id: r.campaign_id, endpoint: r.endpoint, report_type: r.report_type ?? '' };
      this.lastSuccess.set(labels, Date.parse(r.last_success_at) / 1000);
    }
  }
}
