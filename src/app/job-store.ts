/**
 * Where a sync job keeps its mirror and checkpoints: a SQLite file (with its run lock, and either the
 * SQLite or the NDJSON sink) or a PostgreSQL team mirror (stream locks in the server). The
 * commands see only this port, never the backend.
 */
import { resolve } from 'node:path';
import type { BudgetStore } from '../core/rate.js';
import type { Destination } from '../core/types.js';
import { Campaigns } from '../store/campaigns.js';
import { Checkpoints, type StreamRow } from '../store/checkpoints.js';
import { type Db, openDatabase } from '../store/db.js';
import { RunLock } from '../store/lock.js';
import { isPgUrl } from '../store/pg/url.js';
import type { Cursors, Sink } from '../store/sinks/sink.js';
import { SqliteSink } from '../store/sinks/sqlite.js';
import { MirrorGuard } from './mirror-guard.js';

/**
 * Where a job writes, for people to be told: the database file, the NDJSON folder (its checkpoints in
 * the database), or the PostgreSQL mirror as messages name it (its URL without the password).
 */
export type MirrorPlace = { kind: 'sqlite'; db: string } | { kind: 'ndjson'; out: string; db: string } | { kind: 'pg'; name: string };

export interface JobStore {
  readonly place: MirrorPlace;
  /** The destination the database remembered and fed again, when nothing else chose one. */
  readonly remembered?: Destination | undefined;
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
   * where it was opened (moved or removed meanwhile; app/mirror-guard.ts). Watch calls it before each pass.
   */
  verify(): Promise<void>;
  /** The request budget's slots in the mirror's database, shared by every host (PostgreSQL); none: the user's file. */
  budgetSlots?: ((key: string, timeoutMs: number) => BudgetStore) | undefined;
  /** Flushes the sink, then releases the database and the lock; throws as verify() would, once the data is safe. */
  close(): Promise<void>;
}

export interface StoreChoice {
  db: string;
  /** Where `db` came from (config/env.ts DbChoice): what a failure to open a PostgreSQL mirror names. */
  dbWhere?: string;
  pgSchema: string;
  /** Whether a flag, a variable or a profile chose the destination (--format or --out); if not, the database's memory decides. */
  chosen: boolean;
  /** What asked for NDJSON, for messages: `--format ndjson`, its variable, or `--out` alone (or its variable). */
  formatWhere?: string;
  format: string;
  out: string;
  concurrency: number;
  /** The store's warnings (a PostgreSQL mirror's record with U+0000), for the command's output. */
  warning?: ((text: string) => void) | undefined;
}

export async function openJobStore(c: StoreChoice): Promise<JobStore> {
  // pg is loaded only for a postgres:// --db: a SQLite pull's start stays light.
  return isPgUrl(c.db) ? (await import('./job-store-pg.js')).openPgStore(c) : await openSqliteStore(c);
}

async function openSqliteStore(c: StoreChoice): Promise<JobStore> {
  const lock = RunLock.acquire(c.db);
  let db: Db | undefined;
  try {
    db = openDatabase(c.db);
    const state = new Checkpoints(db);
    // A forget killed or stopped by a full disk left its erasure unfinished (files not rewritten, the
    // erased rows' bytes in free pages): a pull (cron's command) finishes it before it syncs anything,
    // rather than wait for someone to run forget again (README "campaign-sync forget"); a failure
    // stops the pull. store/erasure.ts is loaded only then: a pull's start stays light.
    if (state.erasurePending() && !(await import('../store/erasure.js')).finishErasure(db).done) {
      c.warning?.(
        `an erasure an earlier forget left unfinished in ${c.db} could not be finished: another process has it open; the next pull or forget finishes it`,
      );
    }
    // Without --format and --out, the database keeps feeding the destination it fed last.
    const remembered = c.chosen ? undefined : state.destination();
    const destination: Destination = remembered ?? (c.format === 'ndjson' ? { kind: 'ndjson', out: resolve(c.out) } : { kind: 'sqlite' });
    state.claimDestination(destination);
    // The NDJSON sink (its files, index, erasure rewrites) is loaded only for an NDJSON pull.
    const sink =
      destination.kind === 'ndjson'
        ? new (await import('../store/sinks/ndjson.js')).NdjsonSink(db, state, destination.out)
        : new SqliteSink(db, state);
    const opened = db;
    const guard = new MirrorGuard(db, c.db, sink);
    return {
      remembered,
      place:
        destination.kind === 'ndjson' ? { kind: 'ndjson', out: destination.out, db: resolve(c.db) } : { kind: 'sqlite', db: resolve(c.db) },
      sink,
      cursors: state,
      streams: async () => state.all(),
      campaignNames: async () => new Campaigns(opened).names(),
      notified: async () => state.notified(),
      setNotified: async (stream, value) => state.setNotified(stream, value),
      async verify() {
        const moved = guard.check();
        if (moved) throw moved;
      },
      async close() {
        let moved: Error | undefined;
        try {
          await sink.close();
        } finally {
          // After the last commit, before SQLite's close, which would strand the WAL of a moved database.
          moved = guard.check();
          opened.close();
          guard.tidy();
          lock.release();
        }
        if (moved) throw moved;
      },
    };
  } catch (err) {
    db?.close();
    lock.release();
    throw err;
  }
}
