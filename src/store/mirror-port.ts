/**
 * The Mirror port: what a command needs of a mirror, whichever database holds it. store/sqlite/ and
 * store/pg/ each implement MirrorBackend; app/factory.ts picks one from --db, once, and commands see
 * only these types.
 */
import type { ErasedCounts } from '../core/email.js';
import type { BudgetStore } from '../core/rate.js';
import type { Destination } from '../core/types.js';
import type { SkippedCampaign } from './campaigns.js';
import type { StreamRow } from './checkpoints.js';
import type { FileErased } from './erase-ndjson.js';
import type { Holder } from './lock.js';
import type { Cursors, Sink } from './sinks/sink.js';
import type { FleetStatus, FleetTimes } from './stream-leases.js';

export type { FleetStatus, Holder, SkippedCampaign, StreamRow };

/** The database a command was given: --db's value and where it came from (--db, CAMPAIGN_SYNC_DB, a profile's key). */
export interface MirrorTarget {
  path: string;
  where: string;
  /** The PostgreSQL schema (--pg-schema, checked); a SQLite file ignores it. */
  pgSchema: string;
}

/**
 * Where a job writes, for people to be told: the database file, the NDJSON folder (its checkpoints in
 * the database), or the PostgreSQL mirror as messages name it (its URL without the password).
 */
export type MirrorPlace = { kind: 'sqlite'; db: string } | { kind: 'ndjson'; out: string; db: string } | { kind: 'pg'; name: string };

/** A mirror opened for a pull or watch: locked, with its sink and checkpoints. */
export interface JobStore {
  readonly place: MirrorPlace;
  /** The destination the database remembered and fed again, when nothing else chose one. */
  readonly remembered?: Destination | undefined;
  /** The database's password, which no alert may carry (a postgres:// URL's); none for a file. */
  readonly secret?: string | undefined;
  readonly sink: Sink;
  readonly cursors: Cursors;
  /** Every stream's checkpoint and health. */
  streams(): Promise<StreamRow[]>;
  /** Campaign id -> name, for people. */
  campaignNames(): Promise<Map<string, string>>;
  /** The state `--notify` last delivered, by stream (sync/alerts.ts). */
  notified(): Promise<Map<string, string>>;
  /** Records the state `--notify` delivered for a stream. */
  setNotified(stream: string, state: string): Promise<void>;
  /**
   * Throws StorageError (exit 74) once the database file, or an NDJSON folder or file, is no longer
   * where it was opened (moved or removed meanwhile; store/sqlite/mirror-guard.ts). Watch calls it before each pass.
   */
  verify(): Promise<void>;
  /** Optional: the times a fleet's workers share (PostgreSQL), for watch's scheduler. */
  fleetTimes?: (() => Promise<FleetTimes>) | undefined;
  /** The request budget's slots in the mirror's database, shared by every host (PostgreSQL); none: the user's file. */
  budgetSlots?: ((key: string, timeoutMs: number) => BudgetStore) | undefined;
  /** Flushes the sink, then releases the database and the lock; throws as verify() would, once the data is safe. */
  close(): Promise<void>;
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
  /** The store's warnings (a PostgreSQL mirror's record with U+0000), for the command's output. */
  warning?: ((text: string) => void) | undefined;
}

/** What `status` (and `status --check`) reads of a mirror. */
export interface MirrorReader {
  streams(): Promise<StreamRow[]>;
  campaignNames(): Promise<Map<string, string>>;
  skipped(): Promise<SkippedCampaign[]>;
  /** A process syncing the mirror now (SQLite: the lock's holder; PostgreSQL: the first live worker holding stream leases). */
  holder(): Promise<Holder | undefined>;
  /** Optional: the workers syncing the mirror together and their leases (PostgreSQL). */
  fleet?(): Promise<FleetStatus | undefined>;
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
  idsNamed(name: string): Promise<string[]>;
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
  /** The NDJSON files rewritten (a SQLite mirror's only). */
  files: FileErased[];
  /** Whether anything of the person was found (rows, lines, error texts). */
  found: boolean;
  /** An erasure an earlier forget left unfinished was finished first; undefined where none can be left (PostgreSQL). */
  earlier?: boolean | undefined;
}

/** What `forget` needs of a mirror: the erasure of one person, under the lock that keeps a pull from writing them back. */
export interface EraseMirror {
  /** The database as messages name it (a PostgreSQL URL without its password). */
  readonly name: string;
  /** Where a person was looked for, for "no record ... in <searched>". */
  readonly searched: string;
  erase(user: string): Promise<ErasureDone>;
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
  /** Upserts the campaigns' list, as a pull does (the mirror created or migrated on first use). */
  storeCampaigns(t: MirrorTarget, list: Array<Record<string, unknown>>, at: string, lister: string): Promise<void>;
}
