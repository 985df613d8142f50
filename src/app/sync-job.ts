/**
 * Everything a pull or watch needs, set up in a safe order: the settings come checked (bad input
 * changes nothing), then the run lock is taken, then the database and the sink are opened.
 */

import type { ApiClient } from '../api/client.js';
import type { JobSettings, PassSettings } from '../config/command-settings.js';
import type { ApiConfig } from '../config/config.js';
import { rememberDestination, resolvePass } from '../config/settings.js';
import { said } from '../config/sources.js';
import type { RunEvents } from '../core/events.js';
import type { JobStore } from '../store/port.js';
import { DriftTracker } from '../sync/drift.js';
import { type PassDeps, type PassOptions, type PassResult, runPass } from '../sync/pass.js';
import { type ReconcileResult, reconcile } from '../sync/reconcile.js';
import type { DateWindow } from '../sync/stream.js';
import { createClient, serviceClaim } from './client.js';
import { mirrorOf } from './factory.js';
import type { Notifier } from './notify.js';

/** What --notify needs: where, and the staleness bound. */
interface NotifyChoice {
  notifier: Notifier;
  maxAgeMs: number;
}

/** The pass's options of the settings (exported for tests). */
export function passOptions(settings: PassSettings): PassOptions {
  return {
    campaigns: [...settings.campaign],
    type: settings.type,
    reportType: settings.reportType,
    pageSize: settings.pageSize,
    concurrency: settings.concurrency,
    since: settings.since,
    until: settings.until,
    full: settings.full,
    // pull --if-idle: a stream another worker is syncing is left to it.
    skipBusy: settings.ifIdle,
  };
}

/** Checks a pass's flags (with the environment, no config file) as a pull does: for tests. */
export function resolvePassOptions(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): PassOptions {
  return passOptions(resolvePass(flags, env));
}

/** The days a lookback of `ms` re-reads at `now`: from the UTC day of now − ms through today (UTC). */
export function lookbackWindow(ms: number, now: number): DateWindow {
  const day = (t: number) => new Date(t).toISOString().slice(0, 10);
  return { since: day(now - ms), until: day(now) };
}

export interface JobHooks {
  /** Requests, retries, pages, stream ends and warnings (ui/events.ts builds them from the command's Output). */
  events?: RunEvents | undefined;
  /**
   * An alert --notify could not deliver: an error line, shown under --quiet too (the cron mode, where
   * alerts that silently stop going out are the failure that matters). A warning without it.
   */
  alertFailure?: ((text: string) => void) | undefined;
}

/** A locked mirror (SQLite or PostgreSQL) with its sink and an API client, ready for passes. */
export class SyncJob {
  private constructor(
    /** The job's settings, with the destination the database remembered when nothing else chose one. */
    readonly settings: JobSettings,
    readonly dbPath: string,
    /** The mirror and its checkpoints, whichever database holds them (store/port.ts). */
    readonly store: JobStore,
    readonly client: ApiClient,
    readonly options: PassOptions,
    /** Warnings of the configuration (a key file others can read), for the command to print once. */
    readonly warnings: string[],
    private readonly signal: AbortSignal | undefined,
    private readonly hooks: JobHooks,
    private readonly alerts: NotifyChoice | undefined,
  ) {}

  /** Opens the job of `settings` (config/settings.ts: every value already checked, so bad input changes nothing). */
  static async open(settings: JobSettings, signal: AbortSignal | undefined, hooks: JobHooks = {}): Promise<SyncJob> {
    const config = settings.api;
    const mirror = mirrorOf(settings, (text) => hooks.events?.warning?.(text));
    const dbPath = mirror.target.path;
    const formatOrigin = settings.sourceOf('format');
    const store = await mirror.jobStore({
      chosen: formatOrigin.source !== 'default',
      formatWhere: said(formatOrigin, settings.format),
      format: settings.format,
      out: settings.out,
      concurrency: settings.concurrency,
      leaseMs: settings.lease,
      warning: (text) => hooks.events?.warning?.(text),
      retention: settings.retention,
      service: serviceClaim(settings),
    });
    try {
      // Slots in the mirror's database where it keeps them for every host; else the user's file.
      const budgetSlots = store.capabilities.sharedBudget ? store.budgetSlots : undefined;
      const client = createClient(config, { signal, events: hooks.events, budgetSlots });
      let alerts: NotifyChoice | undefined;
      if (settings.notify !== undefined) {
        const { Notifier } = await import('./notify.js');
        const secrets = [config.apiKey, store.secret].filter((s): s is string => s !== undefined);
        alerts = {
          notifier: new Notifier(settings.notify, {
            secrets,
            secret: settings.notifySecret,
            warn: (text) => (hooks.alertFailure ?? hooks.events?.warning)?.(text),
          }),
          maxAgeMs: settings.maxAge,
        };
      }
      const used = store.remembered === undefined ? settings : rememberDestination(settings, store.remembered);
      return new SyncJob(used, dbPath, store, client, passOptions(settings), config.warnings ?? [], signal, hooks, alerts);
    } catch (err) {
      await store.close({ failed: true });
      throw err;
    }
  }

  /** `--lookback` in milliseconds, if given. */
  get lookbackMs(): number | undefined {
    return this.settings.lookback;
  }

  /**
   * The request budget's rate (watch's scheduler plans passes within it): the one it keeps to, which is
   * another process's stricter limit once the shared slots said so (api/budget.ts keptRate).
   */
  get rate(): ApiConfig['rate'] {
    return this.client.budgetRate;
  }

  private deps(): PassDeps {
    return {
      client: this.client,
      sink: this.store.sink,
      state: this.store.cursors,
      signal: this.signal,
      events: this.hooks.events,
      drift: new DriftTracker(this.store.driftKnown, this.settings.contract),
      // A fleet's mirror: the pass takes each stream by a lease; a lone worker's run lock already holds them all.
      leases: this.store.capabilities.fleet ? this.store.sink.leases : undefined,
    };
  }

  /**
   * One pass; with `lookback` (default: whenever --lookback was given) it re-reads the lookback window
   * too. With --notify, the streams' state changes are then told, also after a pass that synced nothing.
   */
  async pass(
    lookback = this.lookbackMs !== undefined,
    select?: PassOptions['select'],
    /** A fleet's watch: its share of the budget, and busy streams left to their holders. */
    fleet?: Pick<PassOptions, 'limit' | 'skipBusy'>,
  ): Promise<PassResult> {
    let result: PassResult;
    try {
      // The mirror's clock (the database server's for a fleet): a worker whose own clock is days off
      // neither reads past results it should store nor re-reads the wrong days.
      const now = await this.store.now();
      const window = lookback && this.lookbackMs !== undefined ? lookbackWindow(this.lookbackMs, now) : undefined;
      // Results older than the retention are not stored, so a --full or a lookback does not bring back
      // what it erased: cut where the retention itself cuts, each result's own date against the
      // mirror's now (store/*/retention.ts), and nothing else is left out (sync/stream.ts).
      const retainAfter = this.settings.retention === undefined ? undefined : now - this.settings.retention;
      result = await runPass(this.deps(), { ...this.options, lookback: window, select, retainAfter, ...fleet });
    } catch (err) {
      await this.notify(undefined);
      throw err;
    }
    await this.notify(result);
    return result;
  }

  /** Tells the state changes; never fails the pass (a store that cannot be read is the pass's own error to report). */
  private async notify(result: PassResult | undefined): Promise<void> {
    if (this.alerts === undefined || this.signal?.aborted) return;
    try {
      await this.alerts.notifier.afterPass(this.store, result, this.alerts.maxAgeMs);
    } catch (err) {
      (this.hooks.alertFailure ?? this.hooks.events?.warning)?.(`--notify: the state changes were not sent: ${(err as Error).message}`);
    }
  }

  /** `reconcile`: re-walk every planned stream from the start and compare (sync/reconcile.ts). */
  async reconcile(prune: boolean): Promise<ReconcileResult> {
    const held = (await this.store.streams()).map((r) => ({ campaignId: r.campaign_id, endpoint: r.endpoint, reportType: r.report_type }));
    return reconcile(this.deps(), { ...this.options, prune, held });
  }

  /** Throws StorageError (74) when the mirror's files are no longer where they were opened (moved, removed). */
  verify(): Promise<void> {
    return this.store.verify();
  }

  /**
   * `failed`: the command failed (it threw, or ends with an exit code other than 0): a mirror this
   * run created and committed nothing to is removed as it closes (store/port.ts JobStore.close).
   * The store flushes and closes its sink first, told of the failure.
   */
  async close(failed = false): Promise<void> {
    try {
      await this.alerts?.notifier.close().catch(() => {});
    } finally {
      try {
        await this.client.close();
      } finally {
        await this.store.close({ failed });
      }
    }
  }
}
