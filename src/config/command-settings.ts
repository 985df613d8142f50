/**
 * What each command's settings hold: the groups of values commands share (output, the mirror, a
 * sync pass, a job) and each command's own. config/settings.ts builds them; commands and app/ read them.
 */

import type { ContractMode } from '../core/drift.js';
import type { Endpoint, ReportType } from '../core/types.js';
import type { ApiConfig, DbKind } from './config.js';
import type { ListenAddress } from './listen.js';
import type { Origin } from './sources.js';

/** Where each value came from. */
export interface Sourced {
  /** The origin of an option's value (a default's when the command has no such option). */
  sourceOf(option: string): Origin;
}

/** --json, --quiet, --verbose. */
export interface OutputSettings {
  readonly json: boolean;
  readonly quiet: boolean;
  readonly verbose: boolean;
}

/** The mirror: --db (a SQLite path or a postgres:// URL) and --pg-schema, checked. */
export interface DbSettings {
  readonly db: string;
  readonly pgSchema: string;
  /** The backend `db` names, decided once as the settings are built (config/config.ts dbKindOf): what app/factory.ts opens. */
  readonly dbKind: DbKind;
  /** What to say before the mirror is opened: a PostgreSQL password where other users can read it (never the password). */
  readonly dbWarnings: readonly string[];
  /** --file-mode: how the mirror's new files and folders are made (private, or readable by the group); `private` for commands that create none. */
  readonly fileMode: 'private' | 'group';
}

/** What a sync pass reads and how. */
export interface PassSettings {
  readonly campaign: readonly string[];
  readonly type: Endpoint | undefined;
  readonly reportType: ReportType;
  /** The destination; when no source gave one, the database's memory decides (store/sqlite/job-store.ts). */
  readonly format: 'sqlite' | 'ndjson';
  readonly out: string;
  readonly pageSize: number;
  readonly concurrency: number;
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly full: boolean;
  /** --lookback in milliseconds. */
  readonly lookback: number | undefined;
  /**
   * --retention (or a profile's `retention`) in milliseconds: results dated before now minus it are
   * not stored, and those stored are erased at most once a day (pull and watch only).
   */
  readonly retention: number | undefined;
  /** --contract: `strict` fails a stream's pass on a new field path or enumeration value (sync/drift.ts). */
  readonly contract: ContractMode;
  /** --lease in milliseconds: how long a PostgreSQL mirror's stream stays this worker's without a renewal. */
  readonly lease: number;
  /** pull --if-idle: a stream another worker is syncing is left to it (false for every other command). */
  readonly ifIdle: boolean;
}

/** What a sync job needs (app/sync-job.ts): the mirror, the API, the pass, the alerts. */
export interface JobSettings extends Sourced, DbSettings, PassSettings {
  readonly api: ApiConfig;
  /** --switch-service: the mirror records this base URL in place of the service it mirrored (store/model/service.ts). */
  readonly switchService: boolean;
  /** --notify, checked (its path or query may hold a secret: never printed). */
  readonly notify: URL | undefined;
  /** The secret that signs each --notify POST (HMAC-SHA256 of its body), when one was given. Never printed. */
  readonly notifySecret: string | undefined;
  /** How old a stream's last success may be before --notify calls it stale. */
  readonly maxAge: number;
}

export interface SyncSettings extends JobSettings, OutputSettings {}

export interface PullSettings extends SyncSettings {
  readonly metricsFile: string | undefined;
  /** --metrics-file-mode, checked: the file's exact mode; undefined: 0644 less the umask. */
  readonly metricsFileMode: number | undefined;
}

export interface WatchSettings extends SyncSettings {
  readonly interval: number;
  readonly maxCycles: number | undefined;
  readonly lookbackEvery: number;
  readonly maxStaleness: number;
  readonly metricsListen: ListenAddress | undefined;
}

export interface ReconcileSettings extends SyncSettings {
  readonly prune: boolean;
}

export interface CampaignsSettings extends Sourced, OutputSettings, DbSettings {
  readonly api: ApiConfig;
  /** --switch-service, as for a job. */
  readonly switchService: boolean;
}

/** The demo: its own database and simulator, the pass's defaults, the API client's defaults (its API is the simulator). */
export interface DemoSettings extends Sourced, OutputSettings, DbSettings, PassSettings {
  /** Always: each demo's simulator listens on a port of its own, and the demo's database is its own. */
  readonly switchService: true;
  readonly seed: string;
  readonly campaigns: number;
  readonly records: number;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxRetryWaitMs: number;
  readonly notify: undefined;
  readonly notifySecret: undefined;
  readonly maxAge: number;
}

/** `notify-test`: the webhook and its signing secret, as pull and watch would POST to it. */
export interface NotifyTestSettings extends Sourced, OutputSettings {
  readonly notify: URL;
  readonly notifySecret: string | undefined;
  /** What to say of the secret's file (readable by others), never the secret. */
  readonly warnings: readonly string[];
}

/** The mirror alone (what app/factory.ts mirrorOf reads). */
export interface MirrorSettings extends Sourced, DbSettings {}

export interface StatusSettings extends MirrorSettings, OutputSettings {
  readonly check: boolean;
  readonly nagios: boolean;
  /**
   * --max-age as given: `status --check` parses it, so that with --nagios a bad value is the
   * plugin's UNKNOWN line (exit 3) as every other problem is, not a usage error.
   */
  readonly maxAge: string | undefined;
}

export interface ResetSettings extends MirrorSettings, OutputSettings {
  /** --campaign, ids or names (repeatable). */
  readonly campaign: readonly string[];
  readonly all: boolean;
}

export interface ForgetSettings extends MirrorSettings, OutputSettings {
  /** --user, as given (the command trims it and refuses an empty one). */
  readonly user: string | undefined;
  /** --older-than in milliseconds: erase the results dated before now minus it. */
  readonly olderThan: number | undefined;
  /** --yes: --older-than erases without a question (what a script must say: it cannot be asked). */
  readonly yes: boolean;
  /** --dry-run: --older-than counts what it would erase, and erases nothing. */
  readonly dryRun: boolean;
}

export interface HistorySettings extends MirrorSettings, OutputSettings {
  /** --user and --record, as given (the command trims them and wants one). */
  readonly user: string | undefined;
  readonly record: string | undefined;
}

export interface ExportSettings extends MirrorSettings, OutputSettings {
  readonly format: 'csv' | 'ndjson' | 'parquet';
  /** --table, as given (commands/export.ts checks it against the tables the mirror has). */
  readonly table: string;
  /** -o, as given: undefined or `-` for stdout. */
  readonly output: string | undefined;
  /** --columns a,b,c, as given. */
  readonly columns: string | undefined;
  /** --since-last <consumer>. */
  readonly sinceLast: string | undefined;
  /** --as-of <timestamp>, as given (commands/export-plan.ts checks it). */
  readonly asOf: string | undefined;
  /** --campaign, an id or a name. */
  readonly campaign: string | undefined;
  /** --since and --until, checked days (YYYY-MM-DD). */
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly rawCsv: boolean;
  /** --safe-csv: neutralise formula cells in a --since-last CSV too (it is raw by default). */
  readonly safeCsv: boolean;
}
