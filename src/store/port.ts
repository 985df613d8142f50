/**
 * The Mirror port: what a command needs of a mirror, whichever database holds it. store/sqlite/ and
 * store/pg/ each implement MirrorBackend; app/factory.ts picks one from --db, once, and commands see
 * only these types.
 */
import type { DriftChange, DriftPage, KnownDrift } from '../core/drift.js';
import type { ErasedCounts } from '../core/email.js';
import type { NewModes } from '../core/fs/modes.js';
import type { BudgetStore } from '../core/rate.js';
import type { Redacted } from '../core/redact.js';
import type { CheckedRecord, CheckpointMove, Destination, PageQuarantine, StreamId } from '../core/types.js';
import type { StorageError } from '../errors.js';
import type { CounterValue } from './model/counters.js';
import type { DeletionReason } from './model/erasure-plan.js';
import type { ChangeTableName, ExportTable } from './model/export-tables.js';
import type { IdConflict, UpsertCounts } from './model/page.js';
import type { QuarantineRow, QuarantineSelection } from './model/quarantine.js';
import type { ServiceClaim } from './model/service.js';
import type { FleetStatus, FleetTimes, StreamLeases } from './model/stream-leases.js';
import type { SkippedRow, StreamRow } from './model/streams.js';

export type {
  CounterValue,
  FleetStatus,
  IdConflict,
  QuarantineRow,
  QuarantineSelection,
  ServiceClaim,
  SkippedRow,
  StreamRow,
  UpsertCounts,
};

/** Who holds a mirror's run lock: the process syncing it. */
export interface Holder {
  pid: number;
  host: string;
  since: string;
}

/** What a file's rewrite did: lines removed (theirs, and tombstones of their records), lines rewritten without them. */
export interface FileErased {
  path: string;
  lines: number;
  changed: number;
}

/** Where the sync engine reads a stream's committed checkpoint (SQLite: SqliteCheckpoints; PostgreSQL: PgCheckpoints). */
export interface Cursors {
  cursor(id: StreamId): bigint | undefined;
}

/** What a page's commit writes besides its records, in the same transaction. */
export interface PageExtras {
  /** Records that failed the record rules, and quarantined ones a retry stored (store/sqlite/quarantine.ts). */
  quarantine?: PageQuarantine | undefined;
  /** The field paths and enumeration values new to the stream (sync/drift.ts). */
  drift?: DriftPage | undefined;
  /** The page's request id (its answer's `x-request-id` header), kept with the versions the page brings. */
  requestId?: string | undefined;
}

export interface PageSink {
  /**
   * Writes a page's records and moves the checkpoint (a compare-and-set, unless `move` is undefined),
   * atomically. A stream hands its pages in order, each once the call for the page before resolved.
   * The sink commits them in that order, each only if the pages before it committed. It may resolve
   * while the page is still under way (PostgreSQL writes it while the page before commits): a
   * failure then surfaces at the stream's next commitPage or settle (or at endStream, flush).
   * Resolves with the counts of the stream's pages whose commit ended since its last commitPage or
   * settle (this page's, when it is written before this resolves). `extras` are written in the same
   * transaction: the page's records that failed the record rules and quarantined ones a retry stored
   * (store/sqlite/quarantine.ts), and the field paths and values new to the stream (sync/drift.ts).
   */
  commitPage(id: StreamId, records: CheckedRecord[], move: CheckpointMove | undefined, extras?: PageExtras): Promise<UpsertCounts>;
  /**
   * Waits until every page of the stream handed to commitPage has committed. Resolves with the counts
   * not yet returned; throws the failure of a page that did not commit.
   */
  settle(id: StreamId): Promise<UpsertCounts>;
  /** Marks the paths and values a full read of the stream no longer carried (sync/drift.ts), as of the mirror's clock (JobStore.now). */
  driftGone(id: StreamId, items: KnownDrift[]): Promise<void>;
  /** The ids of the records this destination holds for a stream (reconcile). */
  storedIds(id: StreamId): Promise<string[]>;
  /**
   * Removes records the service no longer serves (reconcile --prune): deleted from the mirror with
   * their child rows, or one tombstone line each in NDJSON, dated by the mirror's clock (JobStore.now).
   * Returns how many were removed.
   */
  prune(id: StreamId, recordIds: string[]): Promise<number>;
  /** Stores the campaign list (and, for NDJSON, appends the campaigns new or changed for this folder). */
  campaigns(list: Array<Record<string, unknown>>, lister?: string): Promise<void>;
  /** Makes sure the stream has its row in `sync_state`. */
  openStream(id: StreamId): Promise<void>;
  /**
   * Records how the stream's pass ended: a success, or the error (without the key: it is stored and
   * shown), at the mirror's clock's now (JobStore.now): the server's on a mirror a fleet shares, so
   * no worker's clock says how fresh a stream is to the others.
   */
  endStream(id: StreamId, error: Redacted | undefined): Promise<void>;
  /** Commits what the current group holds (see store/sqlite/group-commit.ts). */
  flush(): Promise<void>;
  /** Flushes and releases files; the database stays open. After a storage failure, only releases. */
  close(): Promise<void>;
  /**
   * A line saying which of the sink's own files or folders is no longer where it was opened (moved or
   * removed while the process ran); undefined while all are in place, or when it keeps none (only NDJSON's does).
   */
  moved(): string | undefined;
  /** The storage failure that stopped this sink's writes, if one did. */
  readonly failure: StorageError | undefined;
  /**
   * The stream leases the pass takes each stream by, on a mirror a fleet syncs (capabilities.fleet);
   * without a fleet, a lone worker's: every stream is its own at once (its run lock keeps others out).
   */
  readonly leases: StreamLeases;
}

/** The database a command was given: --db's value and where it came from (--db, CAMPAIGN_SYNC_DB, a profile's key). */
export interface MirrorTarget {
  path: string;
  where: string;
  /** The PostgreSQL schema (--pg-schema, checked); a SQLite file ignores it. */
  pgSchema: string;
  /** The modes of the files and folders this mirror creates (--file-mode); existing ones keep theirs. PostgreSQL creates none. */
  modes: NewModes;
}

/**
 * Where a job writes, for people to be told: the database file, the NDJSON folder (its checkpoints in
 * the database), or the PostgreSQL mirror as messages name it (its URL without the password).
 */
export type MirrorPlace = { kind: 'sqlite'; db: string } | { kind: 'ndjson'; out: string; db: string } | { kind: 'pg'; name: string };

/**
 * What a backend can do: each declares one constant (store/sqlite/backend.ts, store/pg/backend.ts), and
 * the SQLite one per destination, since an NDJSON destination (records in files, their sync state in the
 * database) lacks what reads records from tables. Every member of the port is required: a backend
 * without a capability answers neutrally (an empty list, `undefined` for none, a lone worker's leases
 * and times), and code whose path depends on a capability reads it here, never whether a member exists.
 */
export interface BackendCapabilities {
  /**
   * Several workers may sync the mirror at once: the pass takes each stream by a lease (PageSink.leases)
   * and watch plans by the times they share (JobStore.fleetTimes).
   */
  readonly fleet: boolean;
  /** The request budget's slots are kept in the mirror's database, shared by every host (JobStore.budgetSlots); else in the user's state folder. */
  readonly sharedBudget: boolean;
  /** `export` reads the records from the mirror's tables. */
  readonly export: boolean;
  /** The records are rows of tables a SQL query reads. */
  readonly sql: boolean;
  /** Each result's versions are kept (result_versions), for `history` and `export --as-of`. */
  readonly versions: boolean;
}

/**
 * Counters kept across runs (store/model/counters.ts), by scope: what one metrics file counts. Adding
 * is one transaction, so runs that end together (a fleet's workers) lose no count.
 */
export interface CounterStore {
  /** The scope's totals so far. */
  totals(scope: string): Promise<CounterValue[]>;
  /**
   * Adds `counts` to the scope's totals, after the sink's open group has committed; returns the totals
   * then. A StorageError when it cannot be written (as after any failed write, nothing more is).
   */
  add(scope: string, counts: readonly CounterValue[]): Promise<CounterValue[]>;
}

/** A mirror opened for a pull or watch: locked, with its sink and checkpoints. */
export interface JobStore {
  /** What the destination it opened can do (an NDJSON folder's, or the mirror's tables'). */
  readonly capabilities: BackendCapabilities;
  readonly place: MirrorPlace;
  /** The destination the database remembered and fed again, when nothing else chose one. */
  readonly remembered?: Destination | undefined;
  /** The database's password, which no alert may carry (a postgres:// URL's); none for a file. */
  readonly secret?: string | undefined;
  readonly sink: PageSink;
  readonly cursors: Cursors;
  /** Every stream's checkpoint and health. */
  streams(): Promise<StreamRow[]>;
  /** Campaign id -> name, for people. */
  campaignNames(): Promise<Map<string, string>>;
  /** The counters `pull --metrics-file` keeps between runs. */
  readonly counters: CounterStore;
  /** The state `--notify` last delivered, by stream (sync/alerts.ts). */
  notified(): Promise<Map<string, string>>;
  /** Records the state `--notify` delivered for a stream. */
  setNotified(stream: string, state: string): Promise<void>;
  /**
   * Throws StorageError (exit 74) once the database file, or an NDJSON folder or file, is no longer
   * where it was opened (moved or removed meanwhile; store/sqlite/mirror-guard.ts). Watch calls it before each pass.
   */
  verify(): Promise<void>;
  /** What the stream's earlier passes recorded of its field paths and enumeration values (sync/drift.ts). */
  driftKnown: (stream: string) => Promise<KnownDrift[]>;
  /**
   * The times a fleet's workers share (capabilities.fleet), for watch's scheduler; without a fleet, a
   * lone worker's: its own clock, nothing shared.
   */
  fleetTimes: () => Promise<FleetTimes>;
  /** The request budget's slots in the mirror's database, shared by every host (capabilities.sharedBudget); undefined where it keeps none. */
  budgetSlots: (key: string, timeoutMs: number) => BudgetStore | undefined;
  /** What the retention (StoreChoice.retention) erased as the mirror was opened, when it was due then. */
  readonly retained?: Retained | undefined;
  /** Whether the retention is due again at `now` (store/model/retention.ts): a watch then opens the mirror again, which applies it. */
  retentionDue(now: number): boolean;
  /**
   * The mirror's clock (ms since the epoch): the database server's on a mirror a fleet shares
   * (capabilities.fleet), so that what every worker reads is stamped and judged by one clock; the
   * run's own for a SQLite file, which one host syncs. Retention cuts, freshness and the lookback's
   * days are reckoned on it.
   */
  now(): Promise<number>;
  /**
   * Flushes the sink, then releases the database and the lock; throws as verify() would, once the
   * data is safe. `failed`: the run failed; what it created and committed nothing to (a SQLite
   * database and its lock file, an NDJSON folder's files and the folder) is removed, so a first
   * pull with a wrong key leaves no trace (a PostgreSQL schema stays: other workers may share it).
   */
  close(opts?: { failed?: boolean }): Promise<void>;
}

/** How a pull or watch opens its mirror. */
export interface StoreChoice {
  target: MirrorTarget;
  /** Whether a flag, a variable or a profile chose the destination (--format or --out); if not, the database's memory decides. */
  chosen: boolean;
  /** What asked for NDJSON, for messages: `--format ndjson`, its variable, or `--out` alone (or its variable). */
  formatWhere?: string;
  format: string;
  out: string;
  concurrency: number;
  /** --lease (ms): how long a worker holds a stream without renewing it (PostgreSQL's stream leases); none: the default. */
  leaseMs?: number | undefined;
  /** The store's warnings (an erasure it could not finish), for the command's output. */
  warning?: ((text: string) => void) | undefined;
  /**
   * --retention in ms: when due (at most once a day), the results dated before now minus it are erased
   * as the mirror opens; now and when it last ran are the mirror's clock's (JobStore.now).
   */
  retention?: number | undefined;
  /**
   * The service the job syncs with (store/model/service.ts): claimed first, under the lock, before
   * anything is written; a mirror that records another is a UsageError. None: not checked (tests).
   */
  service?: ServiceClaim | undefined;
}

/** A retention's erasure: the cut (ISO 8601) and what went. */
export interface Retained {
  before: string;
  done: ErasureDone;
}

/** What `status` (and `status --check`) reads of a mirror. */
export interface MirrorReader {
  streams(): Promise<StreamRow[]>;
  campaignNames(): Promise<Map<string, string>>;
  skipped(): Promise<SkippedRow[]>;
  /** A process syncing the mirror now (SQLite: the lock's holder; PostgreSQL: the first live worker holding stream leases). */
  holder(): Promise<Holder | undefined>;
  /**
   * The drift not reported yet, marked reported: each change is taken once. `unmarked` says why they
   * could not be marked (a read-only file), when they will be reported again.
   */
  takeDrift(): Promise<{ changes: DriftChange[]; unmarked?: string | undefined }>;
  /**
   * The workers syncing the mirror together and their leases; undefined for none: a backend without a
   * fleet (capabilities.fleet), or a PostgreSQL mirror of a schema from before the leases.
   */
  fleet(): Promise<FleetStatus | undefined>;
  /** The mirror's clock (JobStore.now): what a stream's age is measured against. */
  now(): Promise<number>;
  close(): Promise<void>;
}

/**
 * What `reset` needs of a mirror: find campaigns by id or name, count and forget checkpoints, under
 * the lock (SQLite: the run lock; PostgreSQL: the locks of the streams it changes, so a worker
 * syncing one of them makes reset exit 75 rather than be undone).
 */
export interface CheckpointAdmin {
  /** The database as messages name it (a PostgreSQL URL without its password). */
  readonly name: string;
  hasStreams(campaignId: string): Promise<boolean>;
  /** Campaign ids for an id, a name or a unique id prefix, as `pull --campaign` takes them (core/campaign-selector.ts). */
  campaignIds(selector: string): Promise<string[]>;
  /** Streams that have a checkpoint. */
  checkpointed(): Promise<number>;
  /**
   * Forgets the checkpoints of the campaigns (all when none), under the lock, and removes their
   * retired streams (a campaign whose type changed); returns how many were forgotten, and which went.
   */
  reset(campaignIds: string[]): Promise<{ forgotten: number; removed: string[] }>;
  close(): Promise<void>;
}

/** What one `forget` erased. */
export interface ErasureDone {
  rows: ErasedCounts;
  /** Rows removed from each table of copies that had any (store/model/erase-tables.ts: versions, quarantine). */
  copies: Record<string, number>;
  /** The NDJSON files rewritten (a SQLite mirror's only). */
  files: FileErased[];
  /** Whether anything of the person was found (rows, lines, error texts). */
  found: boolean;
  /** An erasure an earlier forget left unfinished was finished first; undefined where none can be left (PostgreSQL). */
  earlier?: boolean | undefined;
}

/**
 * What an erasure would remove, counted without changing anything: the counts its ErasureDone would
 * then hold (`forget --dry-run`, and what `forget --older-than` shows before it asks).
 */
export interface ErasureCount {
  rows: ErasedCounts;
  /** Rows of each table of copies that would go (store/model/erase-tables.ts). */
  copies: Record<string, number>;
  /** The NDJSON files that would be rewritten (a SQLite mirror's only). */
  files: FileErased[];
  /** An erasure an earlier forget left unfinished would be finished first; undefined where none can be left (PostgreSQL). */
  earlier?: boolean | undefined;
}

/**
 * What `forget` needs of a mirror: the erasure of one person, or of the results dated before a cut,
 * under the lock that keeps a pull from writing them back.
 */
export interface EraseMirror {
  /** The database as messages name it (a PostgreSQL URL without its password). */
  readonly name: string;
  /** Where a person was looked for, for "no record ... in <searched>". */
  readonly searched: string;
  erase(user: string): Promise<ErasureDone>;
  /** Erases the results dated before `before` (ms since the epoch; store/model/erase-rule.ts), their details and copies. */
  eraseOlderThan(before: number): Promise<ErasureDone>;
  /**
   * Counts what eraseOlderThan(before) would erase, by the same erasure plan over the same rows and
   * lines, erasing nothing. Taken under the same hold as the erasure (the run lock; every stream's
   * lease), which stays until close: an erasure that follows on this mirror erases what it counted.
   */
  countOlderThan(before: number): Promise<ErasureCount>;
  close(): Promise<void>;
}

/** Rows as arrays of cells in the order of their columns: synchronous from SQLite (no await per row), asynchronous from PostgreSQL. */
export type Rows = Iterable<unknown[]> | AsyncIterable<unknown[]>;

/** What `export` reads of a table: its filters, and the columns it writes. */
export interface ExportQuery {
  table: ExportTable;
  /** The campaign's id (from campaignIds), a first day and a last day (YYYY-MM-DD), each optional. */
  campaign?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  /** Picks the columns written, in their order, from those the table has (the mirror's bookkeeping left out); every one when absent. */
  columns?: ((available: string[]) => string[]) | undefined;
}

/**
 * A table's rows in one snapshot of a SQLite mirror, by row-id range (store/sqlite/snapshot.ts RangeReader):
 * CSV export reads a table with a row id through them, a batch of rows joined into bytes at a time
 * (export/csv-table.ts, export/csv-bytes.ts).
 */
export interface RowRanges {
  /** Whether batches can be read (the table's cells allow the batch query). */
  readonly hasBatches: boolean;
  /** The first `limit` rows of [from, to] as one blob (null for none), how many, and the last one's row id. */
  batch(from: bigint, to: bigint, limit: number): { bytes: Buffer | null; rows: number; last: bigint | null };
  /** The rows of [lo, hi) as cells, each ending with its row id. */
  rows(lo: bigint, hi: bigint): IterableIterator<unknown[]>;
  /** Opens the snapshot. */
  begin(): void;
  /** Ends the snapshot; never throws. */
  end(): void;
}

/** A table opened for export. */
export interface ExportRows {
  columns: string[];
  /** Each column's type as the database declares it (for Parquet's column types: export/parquet.ts parquetKind). */
  types: Array<string | null>;
  rows(): Rows;
  /**
   * The same rows by row-id range with which cells carry their type, where the backend has them (SQLite,
   * a table with a row id); undefined for none.
   */
  ranges: () => { reader: RowRanges; batch?: { typed: boolean[] } | undefined } | undefined;
}

/**
 * A result that left the mirror: a tombstone of --since-last. An erasure's holds the id alone (its
 * campaign_id is null); reconcile --prune's its campaign too.
 */
export interface Tombstone {
  id: string;
  campaign_id: string | null;
  deleted_at: string;
  /** Why it went: `pruned` (reconcile --prune), `erased` (forget --user), `retention` (forget --older-than, a retention). */
  reason: DeletionReason;
}

/** What a consumer's `export --since-last` reads, in one snapshot. */
export interface ChangeRows {
  /** The changes numbered in `(from, to]`; `from` is -1 for a consumer never seen (its first export takes every row). */
  window: { from: number; to: number };
  columns: string[];
  types: Array<string | null>;
  /** The window's tombstones (none on a consumer's first export), in order; one whose record came back within it is left out. */
  tombstones(): Iterable<Tombstone> | AsyncIterable<Tombstone>;
  /** The rows inserted or changed within the window. */
  rows(): Rows;
  /** Ends the read, once both were read. */
  end(): Promise<void>;
  /** Never throws: the export's own error is the one to report. */
  abort(): void;
}

/** What `export` needs of a mirror: campaigns by id or name, a table's rows, and (--since-last) a consumer's changes and place. */
export interface ExportSource {
  /** Campaign ids for an id, a name or a unique id prefix, as `pull --campaign` takes them (core/campaign-selector.ts). */
  campaignIds(selector: string): Promise<string[]>;
  /** A campaign's type as stored (null when unknown). */
  campaignType(id: string): Promise<string | null | undefined>;
  /**
   * The folder of NDJSON files that holds this database's records when it is the state of an NDJSON
   * pull and `table` (an export's table or view) holds no row; undefined otherwise.
   */
  recordsElsewhere(table: ExportTable): Promise<string | undefined>;
  /** A table's rows; a table the mirror does not have yet (an older schema) is a usage error saying to pull once. */
  rows(q: ExportQuery): Promise<ExportRows>;
  /** A consumer's changes of a results table since its last export (a source opened `forChanges` only). */
  changes(consumer: string, table: ChangeTableName, columns?: (available: string[]) => string[]): Promise<ChangeRows>;
  /** Remembers that `consumer` has every change of `table` up to `to`, once its file is in place; never moves it back. */
  remember(consumer: string, table: ChangeTableName, to: number, at: string): Promise<void>;
  /**
   * A failure of the database as the command reports it (SQLite's errors exit 74 naming the file);
   * undefined for an error that is not the database's.
   */
  failure(err: unknown): unknown | undefined;
  close(): Promise<void>;
}

/** What `quarantine list|drop|retry` needs of a mirror: its quarantined records (store/sqlite/quarantine.ts). */
export interface QuarantineAdmin {
  /** The database as messages name it (a PostgreSQL URL without its password). */
  readonly name: string;
  list(): Promise<QuarantineRow[]>;
  /** Campaign id -> name, for people. */
  campaignNames(): Promise<Map<string, string>>;
  /** Deletes the selected records; returns those deleted. */
  drop(which: QuarantineSelection): Promise<QuarantineRow[]>;
  close(): Promise<void>;
}

/** One backend's implementation of the port (store/sqlite/backend.ts, store/pg/backend.ts). */
export interface MirrorBackend {
  /** Opens the mirror for a pull or watch, locked, creating or migrating it. */
  openJobStore(c: StoreChoice): Promise<JobStore>;
  /** Opens an existing mirror to read; an empty file is a mirror without streams if `emptyHasNoStreams`. */
  openReader(t: MirrorTarget, opts: { emptyHasNoStreams?: boolean | undefined }): Promise<MirrorReader>;
  /** Opens an existing mirror for `reset`, under the lock. */
  openCheckpointAdmin(t: MirrorTarget): Promise<CheckpointAdmin>;
  /** Opens an existing mirror for `forget`, under the lock. */
  openEraser(t: MirrorTarget): Promise<EraseMirror>;
  /** Opens an existing mirror to read its versions of results (history, export --as-of). */
  openVersions(t: MirrorTarget): Promise<VersionReader>;
  /** Opens an existing mirror's quarantine (migrated to have one). */
  openQuarantine(t: MirrorTarget): Promise<QuarantineAdmin>;
  /**
   * Upserts the campaigns' list, as a pull does (the mirror created or migrated on first use), seen at
   * the mirror's clock's now, once `service` is claimed (store/model/service.ts): a mirror that
   * records another is a UsageError, and nothing is stored.
   */
  storeCampaigns(t: MirrorTarget, list: Array<Record<string, unknown>>, lister: string, service: ServiceClaim): Promise<void>;
  /**
   * Opens an existing mirror to export from: read-only, or (`forChanges`, export --since-last)
   * read-write, to remember a consumer's place (and number an older mirror's changes).
   */
  openExport(t: MirrorTarget, opts: { forChanges: boolean }): Promise<ExportSource>;
  /** The local files that hold the mirror (a SQLite file, its journal and lock), by their real paths: none an export may write over. */
  ownFiles(t: MirrorTarget): string[];
}

/** One version of a result, as `result_versions` holds it (read by store/sqlite/versions.ts, store/pg/versions.ts). */
export interface ResultVersion {
  kind: 'session' | 'role';
  id: string;
  /** 1 for the first version the mirror saw, then one more for each change and each deletion. */
  version: number;
  campaign_id: string | null;
  report_type: string | null;
  user_id: string | null;
  user_email: string | null;
  order_index: bigint | null;
  /** A deletion (reconcile --prune): the record was no longer served; no `raw`. */
  deleted: boolean;
  /** When this mirror first saw this version (ISO 8601, UTC). */
  valid_from: string;
  /** When it saw the next version or the deletion; null for the current one. */
  valid_to: string | null;
  /** The service's request_id of the page that brought it, where the service sent one. */
  request_id: string | null;
  /** The record as served (JSON text); null for a deletion. */
  raw: string | null;
}

/** A version with what it says of the candidate (store/model/versions.ts versionSummary). */
export interface HistoryVersion extends ResultVersion {
  score: number | null;
  /** Role results' recommendation_status. */
  recommendation: string | null;
}

/** Who or what `history` asks about: a person (id or e-mail), or one record id. */
export interface HistoryQuery {
  user?: string | undefined;
  record?: string | undefined;
}

/** What `history` and `export --as-of` read of a mirror: its versions of results. */
export interface VersionReader {
  /** Every version of the records that name the person at their top (or of the record), by record then version. */
  history(q: HistoryQuery): Promise<HistoryVersion[]>;
  /**
   * The results of `kind` as the mirror held them at `at` (ISO 8601), deletions left out, by id; of
   * one campaign if given: each as the row its table held, then its version and valid_from.
   */
  asOf(kind: 'session' | 'role', at: string, campaign?: string): { columns: string[]; rows: AsyncIterable<unknown[]> };
  /** Campaign ids for an id or a name, as ExportSource.campaignIds. */
  campaignIds(selector: string): Promise<string[]>;
  /** When the history begins: the time of the first change the mirror recorded (ISO 8601, UTC); null with none. */
  start(): Promise<string | null>;
  /** As ExportSource.recordsElsewhere, for the results of `kind`. */
  recordsElsewhere(kind: 'session' | 'role'): Promise<string | undefined>;
  close(): Promise<void>;
}
