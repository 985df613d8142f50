/**
 * Everything a pull or watch needs, set up in a safe order: validate every flag first (bad input
 * changes nothing), then take the run lock, then open the database and the sink.
 */

import { resolve } from 'node:path';
import type { ApiClient } from '../api/client.js';
import { type ApiConfig, type ApiFlags, resolveApiConfig, resolveDbPath } from '../config/config.js';
import { parseDate } from '../config/duration.js';
import { readEnv } from '../config/env.js';
import { parseSettings, syncSchema } from '../config/schema.js';
import type { RunEvents } from '../core/events.js';
import type { Destination, Endpoint } from '../core/types.js';
import { UsageError } from '../errors.js';
import { Checkpoints } from '../store/checkpoints.js';
import { type Db, openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { NdjsonSink } from '../store/sinks/ndjson.js';
import type { Sink } from '../store/sinks/sink.js';
import { SqliteSink } from '../store/sinks/sqlite.js';
import { type PassOptions, type PassResult, runPass } from '../sync/pass.js';
import { type ReconcileResult, reconcile } from '../sync/reconcile.js';
import type { DateWindow } from '../sync/stream.js';
import { createClient } from './client.js';

export interface SyncFlags extends ApiFlags {
  db?: string;
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
}

/** The pass's settings with their defaults (config/schema.ts). */
function syncSettings(flags: SyncFlags) {
  return parseSettings(syncSchema, {
    reportType: flags.reportType,
    format: flags.format ?? readEnv('format'),
    out: flags.out ?? readEnv('out'),
    pageSize: flags.pageSize,
    concurrency: flags.concurrency,
    lookback: flags.lookback,
  });
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
  if (flags.type !== undefined && flags.type !== 'session' && flags.type !== 'role')
    throw new UsageError('--type: must be session or role');
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
}

/** A locked database with its sink and an API client, ready for passes. */
export class SyncJob {
  private constructor(
    readonly dbPath: string,
    readonly db: Db,
    readonly state: Checkpoints,
    readonly sink: Sink,
    readonly client: ApiClient,
    readonly options: PassOptions,
    /** `--lookback` in milliseconds, if given. */
    readonly lookbackMs: number | undefined,
    /** Warnings of the configuration (a key file others can read), for the command to print once. */
    readonly warnings: string[],
    private readonly lock: RunLock,
    private readonly signal: AbortSignal | undefined,
    private readonly hooks: JobHooks,
    /** The request budget's rate (watch's scheduler plans passes within it). */
    readonly rate: ApiConfig['rate'],
  ) {}

  static open(flags: SyncFlags, signal: AbortSignal | undefined, hooks: JobHooks = {}, api?: ApiConfig): SyncJob {
    const settings = syncSettings(flags);
    const options = resolvePassOptions(flags, settings);
    const { format, out: outDir } = settings;
    const config = api ?? resolveApiConfig(flags);
    const dbPath = resolveDbPath(flags.db);
    const lock = RunLock.acquire(dbPath);
    let db: Db | undefined;
    try {
      db = openDatabase(dbPath);
      const state = new Checkpoints(db);
      // Without --format and --out, the database keeps feeding the destination it fed last.
      const chosen = flags.format ?? readEnv('format') ?? flags.out ?? readEnv('out');
      const remembered = chosen === undefined ? state.destination() : undefined;
      const destination: Destination = remembered ?? (format === 'ndjson' ? { kind: 'ndjson', out: resolve(outDir) } : { kind: 'sqlite' });
      state.claimDestination(destination);
      const sink = destination.kind === 'ndjson' ? new NdjsonSink(db, state, destination.out) : new SqliteSink(db, state);
      const client = createClient(config, { signal, events: hooks.events });
      return new SyncJob(
        dbPath,
        db,
        state,
        sink,
        client,
        options,
        settings.lookback,
        config.warnings ?? [],
        lock,
        signal,
        hooks,
        config.rate,
      );
    } catch (err) {
      db?.close();
      lock.release();
      throw err;
    }
  }

  /** One pass; with `lookback` (default: whenever --lookback was given) it re-reads the lookback window too. */
  pass(lookback = this.lookbackMs !== undefined, select?: PassOptions['select']): Promise<PassResult> {
    const window = lookback && this.lookbackMs !== undefined ? lookbackWindow(this.lookbackMs, Date.now()) : undefined;
    return runPass(
      {
        client: this.client,
        sink: this.sink,
        state: this.state,
        signal: this.signal,
        events: this.hooks.events,
      },
      { ...this.options, lookback: window, select },
    );
  }

  /** `reconcile`: re-walk every planned stream from the start and compare (sync/reconcile.ts). */
  reconcile(prune: boolean): Promise<ReconcileResult> {
    return reconcile(
      { client: this.client, sink: this.sink, state: this.state, signal: this.signal, events: this.hooks.events },
      { ...this.options, prune },
    );
  }

  async close(): Promise<void> {
    try {
      await this.sink.close();
    } finally {
      try {
        await this.client.close();
      } finally {
        this.db.close();
        this.lock.release();
      }
    }
  }
}
