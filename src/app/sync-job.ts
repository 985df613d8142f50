/**
 * Everything a pull or watch needs, set up in a safe order: validate every flag first (bad input
 * changes nothing), then take the run lock, then open the database and the sink.
 */

import type { ApiClient } from '../api/client.js';
import { type ApiConfig, type ApiFlags, resolveApiConfig, resolvePgSchema } from '../config/config.js';
import { CHOICES, DEFAULTS } from '../config/defaults.js';
import { parseDate, parseDuration } from '../config/duration.js';
import { type DbFlags, ENV, type ProfileFilled, readEnv, resolveDb } from '../config/env.js';
import { parseNotifyUrl } from '../config/notify.js';
import { checkAt, parseSettings, syncSchema } from '../config/schema.js';
import type { RunEvents } from '../core/events.js';
import type { Endpoint } from '../core/types.js';
import { UsageError } from '../errors.js';
import { dbWarnings, isPgUrl } from '../store/pg/url.js';
import { type PassOptions, type PassResult, runPass } from '../sync/pass.js';
import { type ReconcileResult, reconcile } from '../sync/reconcile.js';
import type { DateWindow } from '../sync/stream.js';
import { createClient } from './client.js';
import { type JobStore, openJobStore } from './job-store.js';
import type { Notifier } from './notify.js';

/** What --notify needs: where, and the staleness bound. */
interface NotifyChoice {
  notifier: Notifier;
  maxAgeMs: number;
}

/** The database password of a postgres:// URL, which an alert must never carry. */
function dbPassword(path: string): string | undefined {
  if (!isPgUrl(path)) return undefined;
  try {
    return decodeURIComponent(new URL(path).password) || undefined;
  } catch {
    return undefined;
  }
}

export interface SyncFlags extends ApiFlags, DbFlags, ProfileFilled {
  pgSchema?: string;
  campaign?: string[];
  type?: string;
  reportType?: string;
  format?: string;
  out?: string;
  pageSize?: string;
  concurrency?: string;
  since?: string;
  until?: string;
  full?: boolean;
  lookback?: string;
  /** `--notify <url>`: POST each stream state change here (app/notify.ts). */
  notify?: string;
  /** How old a stream's last success may be before --notify calls it stale (watch's --max-age). */
  maxAge?: string;
}

/**
 * The pass's settings with their defaults (config/schema.ts). An NDJSON folder given without a
 * format means NDJSON: `--out` alone went into SQLite without a word, and moving to the folder then
 * took a reset and a full re-read. Given with `--format sqlite`, the two contradict each other.
 */
function syncSettings(flags: SyncFlags) {
  const format = flags.format ?? checkAt(syncSchema.format, ENV.format.name, readEnv('format'));
  const out = flags.out ?? readEnv('out');
  if (format === 'sqlite' && out !== undefined) {
    const formatWhere = said(origin(flags, 'format') as Origin, 'sqlite');
    const outWhere = (origin(flags, 'out') as Origin).where;
    throw new UsageError(`${outWhere} names an NDJSON folder, but ${formatWhere} writes records into --db; drop one of them`);
  }
  return parseSettings(syncSchema, {
    reportType: flags.reportType,
    format: format ?? (out !== undefined ? 'ndjson' : undefined),
    out,
    pageSize: flags.pageSize,
    concurrency: flags.concurrency,
    lookback: flags.lookback,
  });
}

/** Where an option's value came from: its flag, its variable, or the profile key that filled the flag. */
interface Origin {
  where: string;
  kind: 'flag' | 'env' | 'profile';
}

function origin(flags: SyncFlags, option: 'format' | 'out'): Origin | undefined {
  if (flags[option] !== undefined) {
    const key = flags.fromProfile?.[option];
    return key === undefined ? { where: `--${option}`, kind: 'flag' } : { where: key, kind: 'profile' };
  }
  return readEnv(option) === undefined ? undefined : { where: ENV[option].name, kind: 'env' };
}

/** A value with its origin, as the user wrote it: `--format ndjson`, `CAMPAIGN_SYNC_FORMAT=ndjson`, `<file>: profiles.x.format = "ndjson"`. */
function said(o: Origin, value: string): string {
  return o.kind === 'flag' ? `${o.where} ${value}` : o.kind === 'env' ? `${o.where}=${value}` : `${o.where} = "${value}"`;
}

/** What asked for the format, in the user's words: `--format ndjson`, its variable, its profile key, or `--out` alone (or its variable or key). */
function formatSource(flags: SyncFlags): string {
  const format = origin(flags, 'format');
  if (format !== undefined) return said(format, flags.format ?? (readEnv('format') as string));
  const out = origin(flags, 'out');
  return out === undefined ? '--format' : `${out.where} (an NDJSON folder)`;
}

/** Validates the pass flags (exported for tests); `settings` when the caller parsed them already. */
export function resolvePassOptions(flags: SyncFlags, settings = syncSettings(flags)): PassOptions {
  const since = flags.since === undefined ? undefined : parseDate(flags.since, '--since');
  const until = flags.until === undefined ? undefined : parseDate(flags.until, '--until');
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);
  if (flags.full && (since || until)) throw new UsageError('--full re-reads everything; it does not go with --since/--until');
  // Ten years back is before any campaign; more is a typo (and dates before year 0 are not dates).
  if (settings.lookback !== undefined && settings.lookback > 3650 * 86_400_000)
    throw new UsageError(`--lookback: "${flags.lookback}" reaches back more than 3650d; use pull --full to re-read everything`);
  if (settings.lookback !== undefined && (flags.full || since || until))
    throw new UsageError('--lookback re-reads a recent window after the incremental read; it does not go with --full or --since/--until');
  if (flags.type !== undefined && !(CHOICES.type as readonly string[]).includes(flags.type))
    throw new UsageError(`--type: must be ${CHOICES.type.join(' or ')}`);
  return {
    campaigns: flags.campaign ?? [],
    type: flags.type as Endpoint | undefined,
    reportType: settings.reportType,
    pageSize: settings.pageSize,
    concurrency: settings.concurrency,
    since,
    until,
    full: flags.full === true,
  };
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
    readonly dbPath: string,
    /** The mirror and its checkpoints, whichever database holds them (app/job-store.ts). */
    readonly store: JobStore,
    readonly client: ApiClient,
    readonly options: PassOptions,
    /** `--lookback` in milliseconds, if given. */
    readonly lookbackMs: number | undefined,
    /** Warnings of the configuration (a key file others can read), for the command to print once. */
    readonly warnings: string[],
    private readonly signal: AbortSignal | undefined,
    private readonly hooks: JobHooks,
    /** The request budget's rate (watch's scheduler plans passes within it). */
    readonly rate: ApiConfig['rate'],
    private readonly alerts: NotifyChoice | undefined,
  ) {}

  static async open(flags: SyncFlags, signal: AbortSignal | undefined, hooks: JobHooks = {}, api?: ApiConfig): Promise<SyncJob> {
    const settings = syncSettings(flags);
    const options = resolvePassOptions(flags, settings);
    const config = api ?? resolveApiConfig(flags);
    // Checked before the lock is taken: a bad URL changes nothing.
    const notifyUrl = flags.notify === undefined ? undefined : parseNotifyUrl(flags.notify, flags.allowInsecureHttp === true);
    const maxAgeMs = parseDuration(flags.maxAge ?? DEFAULTS.maxAge, '--max-age');
    const db = resolveDb(flags);
    for (const w of dbWarnings(db)) hooks.events?.warning?.(w);
    const dbPath = db.path;
    const store = await openJobStore({
      db: dbPath,
      dbWhere: db.where,
      pgSchema: resolvePgSchema(flags.pgSchema),
      chosen: flags.format ?? readEnv('format') ?? flags.out ?? readEnv('out'),
      formatWhere: formatSource(flags),
      format: settings.format,
      out: settings.out,
      concurrency: settings.concurrency,
      warning: (text) => hooks.events?.warning?.(text),
    });
    try {
      const client = createClient(config, { signal, events: hooks.events, budgetSlots: store.budgetSlots });
      let alerts: NotifyChoice | undefined;
      if (notifyUrl !== undefined) {
        const { Notifier } = await import('./notify.js');
        const secrets = [config.apiKey, dbPassword(dbPath)].filter((s): s is string => s !== undefined);
        alerts = {
          notifier: new Notifier(notifyUrl, { secrets, warn: (text) => (hooks.alertFailure ?? hooks.events?.warning)?.(text) }),
          maxAgeMs,
        };
      }
      return new SyncJob(dbPath, store, client, options, settings.lookback, config.warnings ?? [], signal, hooks, config.rate, alerts);
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  private deps() {
    return { client: this.client, sink: this.store.sink, state: this.store.cursors, signal: this.signal, events: this.hooks.events };
  }

  /**
   * One pass; with `lookback` (default: whenever --lookback was given) it re-reads the lookback window
   * too. With --notify, the streams' state changes are then told, also after a pass that synced nothing.
   */
  async pass(lookback = this.lookbackMs !== undefined, select?: PassOptions['select']): Promise<PassResult> {
    const window = lookback && this.lookbackMs !== undefined ? lookbackWindow(this.lookbackMs, Date.now()) : undefined;
    let result: PassResult;
    try {
      result = await runPass(this.deps(), { ...this.options, lookback: window, select });
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

  async close(): Promise<void> {
    try {
      await this.alerts?.notifier.close().catch(() => {});
      await this.store.sink.close();
    } finally {
      try {
        await this.client.close();
      } finally {
        await this.store.close();
      }
    }
  }
}
