/**
 * Everything a pull or watch needs, set up in a safe order: validate every flag first (bad input
 * changes nothing), then take the run lock, then open the database and the sink.
 */

import { resolve } from 'node:path';
import { RequestBudget } from '../api/budget.js';
import { ApiClient } from '../api/client.js';
import type { ReportType } from '../api/schemas.js';
import { type ApiConfig, type ApiFlags, resolveApiConfig, resolveDbPath } from '../config/config.js';
import { parseDate, parseIntIn } from '../config/duration.js';
import { UsageError } from '../errors.js';
import { type Db, openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { NdjsonSink, type Sink, SqliteSink } from '../store/sink.js';
import { type Endpoint, SyncState } from '../store/state.js';
import type { OutputFlags } from '../ui/output.js';
import { type PassDeps, type PassOptions, type PassResult, runPass } from './pass.js';

export interface SyncFlags extends ApiFlags, OutputFlags {
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
}

/** Validates the pass flags (exported for tests). */
export function resolvePassOptions(flags: SyncFlags): PassOptions {
  const since = flags.since === undefined ? undefined : parseDate(flags.since, '--since');
  const until = flags.until === undefined ? undefined : parseDate(flags.until, '--until');
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);
  if (flags.full && (since || until)) throw new UsageError('--full re-reads everything; it does not go with --since/--until');
  if (flags.type !== undefined && flags.type !== 'session' && flags.type !== 'role')
    throw new UsageError('--type: must be session or role');
  const reportType = flags.reportType ?? 'DETAILED';
  if (reportType !== 'DETAILED' && reportType !== 'OVERALL') throw new UsageError('--report-type: must be DETAILED or OVERALL');
  return {
    campaigns: flags.campaign ?? [],
    type: flags.type as Endpoint | undefined,
    reportType: reportType as ReportType,
    pageSize: parseIntIn(flags.pageSize ?? '100', '--page-size', 1, 100),
    concurrency: parseIntIn(flags.concurrency ?? '4', '--concurrency', 1, 64),
    since,
    until,
    full: flags.full === true,
  };
}

export interface SessionHooks {
  onRetry?: (err: Error, delayMs: number, attempt: number) => void;
  warn?: (text: string) => void;
  onProgress?: PassDeps['onProgress'];
}

/** A locked database with its sink and an API client, ready for passes. */
export class SyncSession {
  private constructor(
    readonly dbPath: string,
    readonly db: Db,
    readonly state: SyncState,
    readonly sink: Sink,
    readonly client: ApiClient,
    readonly options: PassOptions,
    private readonly lock: RunLock,
    private readonly signal: AbortSignal | undefined,
    private readonly hooks: SessionHooks,
  ) {}

  static open(flags: SyncFlags, signal: AbortSignal | undefined, hooks: SessionHooks = {}, api?: ApiConfig): SyncSession {
    const options = resolvePassOptions(flags);
    const format = flags.format ?? 'sqlite';
    if (format !== 'sqlite' && format !== 'ndjson') throw new UsageError('--format: must be sqlite or ndjson');
    const config = api ?? resolveApiConfig(flags);
    const dbPath = resolveDbPath(flags.db);
    const lock = RunLock.acquire(dbPath);
    let db: Db | undefined;
    try {
      db = openDatabase(dbPath);
      const state = new SyncState(db);
      const out = resolve(flags.out ?? './campaign-sync-out');
      state.claimDestination(format === 'ndjson' ? `ndjson:${out}` : 'sqlite', (d) =>
        d === 'sqlite' ? '--format sqlite' : `--format ndjson --out ${d.slice('ndjson:'.length)}`,
      );
      const sink = format === 'ndjson' ? new NdjsonSink(db, state, out) : new SqliteSink(db, state);
      const budget = new RequestBudget(config.rate);
      const client = new ApiClient(config, { budget, signal, onRetry: hooks.onRetry });
      return new SyncSession(dbPath, db, state, sink, client, options, lock, signal, hooks);
    } catch (err) {
      db?.close();
      lock.release();
      throw err;
    }
  }

  pass(): Promise<PassResult> {
    return runPass(
      {
        client: this.client,
        sink: this.sink,
        state: this.state,
        signal: this.signal,
        warn: this.hooks.warn,
        onProgress: this.hooks.onProgress,
      },
      this.options,
    );
  }

  async close(): Promise<void> {
    try {
      this.sink.close();
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
