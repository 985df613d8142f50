/** A pull's or watch's SQLite mirror: the run lock, the database, and the SQLite or the NDJSON sink. */
import { lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { currentClock } from '../../core/io.js';
import type { Destination } from '../../core/types.js';
import { retentionDue } from '../model/retention.js';
import type { BackendCapabilities, JobStore, Retained, StoreChoice } from '../port.js';
import { Campaigns } from './campaigns.js';
import { SqliteCheckpoints } from './checkpoints.js';
import { SqliteCounters } from './counters.js';
import { type Db, openDatabase } from './db.js';
import { discardBareDatabase } from './discard.js';
import { DriftLedger } from './drift-ledger.js';
import { MirrorGuard } from './mirror-guard.js';
import type { NdjsonSink } from './ndjson/sink.js';
import { RunLock } from './run-lock.js';
import { claimSqliteService, restoreSqliteService } from './service.js';
import { SqliteSink } from './sink.js';

/** Opens the mirror for a pull or watch; `capabilities` are the backend's, by destination (store/sqlite/backend.ts). */
export async function openSqliteJobStore(
  c: StoreChoice,
  capabilities: Readonly<Record<Destination['kind'], BackendCapabilities>>,
): Promise<JobStore> {
  const path = c.target.path;
  const lock = RunLock.acquire(path);
  // Under the lock, no other pull creates it meanwhile: a run that created the database and fails
  // before committing anything removes it again (discard.ts).
  const created = lstatSync(path, { throwIfNoEntry: false }) === undefined;
  let db: Db | undefined;
  let ndjson: NdjsonSink | undefined;
  // The URL a --switch-service replaced: put back if the run fails.
  let replaced: string | undefined;
  try {
    db = openDatabase(path, { mode: c.target.modes.file });
    // Before anything else is written: a mirror of another service is refused as it was found.
    if (c.service !== undefined) replaced = claimSqliteService(db, c.service, path);
    const state = new SqliteCheckpoints(db);
    // A forget killed or stopped by a full disk left its erasure unfinished (files not rewritten, the
    // erased rows' bytes in free pages): a pull (cron's command) finishes it before it syncs anything,
    // rather than wait for someone to run forget again (README "campaign-sync forget"); a failure
    // stops the pull. store/sqlite/erasure.ts is loaded only then: a pull's start stays light.
    if (state.erasurePending() && !(await import('./erasure.js')).finishErasure(db).done) {
      c.warning?.(
        `an erasure an earlier forget left unfinished in ${path} could not be finished: another process has it open; the next pull or forget finishes it`,
      );
    }
    // Before the sink opens any NDJSON file: the erasure rewrites them.
    let retained: Retained | undefined;
    let ranAt: string | undefined;
    if (c.retention !== undefined) {
      const { applyRetention, retentionRanAt } = await import('./retention.js');
      const r = applyRetention(db, c.retention, currentClock().now());
      if (r !== undefined) {
        const { rows, copies, files, earlier, found, done, before } = r;
        retained = { before: new Date(before).toISOString(), done: { rows, copies, files, earlier, found } };
        if (!done)
          c.warning?.(
            `the retention's erasure in ${path} could not be finished: another process has it open; the next pull or forget finishes it`,
          );
      }
      ranAt = retentionRanAt(db);
    }
    // Without --format and --out, the database keeps feeding the destination it fed last.
    const remembered = c.chosen ? undefined : state.destination();
    const destination: Destination = remembered ?? (c.format === 'ndjson' ? { kind: 'ndjson', out: resolve(c.out) } : { kind: 'sqlite' });
    state.claimDestination(destination);
    // The NDJSON sink (its files, index, erasure rewrites) is loaded only for an NDJSON pull.
    ndjson =
      destination.kind === 'ndjson'
        ? new (await import('./ndjson/sink.js')).NdjsonSink(db, state, destination.out, { modes: c.target.modes })
        : undefined;
    const sink = ndjson ?? new SqliteSink(db, state);
    const folderSink = ndjson;
    const opened = db;
    const guard = new MirrorGuard(db, path, sink);
    const drift = new DriftLedger(db);
    return {
      capabilities: capabilities[destination.kind],
      remembered,
      retained,
      retentionDue: (now) => c.retention !== undefined && retentionDue(ranAt, now),
      place:
        destination.kind === 'ndjson' ? { kind: 'ndjson', out: destination.out, db: resolve(path) } : { kind: 'sqlite', db: resolve(path) },
      sink,
      cursors: state,
      streams: async () => state.all(),
      campaignNames: async () => new Campaigns(opened).names(),
      counters: new SqliteCounters(db, path, () => sink.flush()),
      driftKnown: async (stream) => drift.known(stream),
      // No fleet: one process syncs the file under its run lock, and shares no times.
      fleetTimes: async () => ({ now: currentClock().now(), checked: new Map(), workers: 1 }),
      // One host syncs the file: the run's clock stamps it and judges it.
      now: async () => currentClock().now(),
      // The budget's slots are in the user's state folder (app/client.ts), not in the mirror.
      budgetSlots: () => undefined,
      notified: async () => state.notified(),
      setNotified: async (stream, value) => state.setNotified(stream, value),
      async verify() {
        const moved = guard.check();
        if (moved) throw moved;
      },
      async close(opts = {}) {
        let moved: Error | undefined;
        if (opts.failed && folderSink) folderSink.leaveNothing = true;
        try {
          await sink.close();
        } finally {
          // After the last commit, before SQLite's close, which would strand the WAL of a moved database.
          moved = guard.check();
          // A switch is kept by a run that succeeds at the new URL, not by a typo's failure.
          if (opts.failed === true && !moved && replaced !== undefined && c.service !== undefined) {
            try {
              restoreSqliteService(opened, c.service.url, replaced, path);
            } catch (err) {
              c.warning?.(`${(err as Error).message}: ${path} still records ${c.service.url} as its service`);
            }
          }
          leave(opened, opts.failed === true && !moved);
          guard.tidy();
        }
        if (moved) throw moved;
      },
    };
  } catch (err) {
    if (ndjson !== undefined) {
      ndjson.leaveNothing = true;
      await ndjson.close().catch(() => {});
    }
    leave(db, true);
    throw err;
  }

  /**
   * Closes the database and releases the lock; after a failure, a database this run created that
   * holds nothing committed goes, with the lock file when this run created it too (a refused --db,
   * such as a text file, leaves no lock file beside it either).
   */
  function leave(opened: Db | undefined, failed: boolean): void {
    const gone = failed && opened !== undefined && created && discardBareDatabase(opened, path);
    if (!gone) opened?.close();
    if (failed && (gone || opened === undefined)) lock.discard();
    else lock.release();
  }
}
