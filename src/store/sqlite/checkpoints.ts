/**
 * Checkpoints and stream health (`sync_state`). Cursors are int64: read with safe integers on so
 * values past 2^53 come back exact.
 */
import type { CheckpointMove, Destination, StreamId } from '../../core/types.js';
import { StorageError, UsageError } from '../../errors.js';
import { listedIds, NOTIFIED_PREFIX, retiredStreams, type StreamRow, type StreamSqlRow, streamRow } from '../model/streams.js';
import { IdConflicts } from './conflicts.js';
import type { Db } from './db.js';
import { decodeDestination, describeDestination, encodeDestination } from './destination.js';
import { SqliteQuarantine } from './quarantine.js';

export type { StreamRow };

/**
 * The `meta` row of an erasure not finished (store/sqlite/erasure-mark.ts): set with the deletion, cleared
 * once every file is rewritten and VACUUM and the WAL's truncation are done. It names whom it erases
 * by keyed digests only.
 */
export const ERASE_PENDING_KEY = 'erase_pending';

/**
 * Every stream, with when its campaign was last listed (`campaign_seen_at`), from which, with the
 * listers' newest lists, `unlisted_since` is made (store/model/streams.ts listings).
 */
export const STREAMS_SQL =
  'SELECT s.*, c.seen_at AS campaign_seen_at, c.type AS campaign_type FROM sync_state s LEFT JOIN campaigns c ON c.id = s.campaign_id';

/**
 * The state `--notify` last delivered for each stream (sync/alerts.ts), one `meta` row each:
 * `notified:<stream>` -> `failing`, `stale`, `unlisted` or `ok`. Kept with the checkpoints so that a
 * restarted watch or the next cron pull sends only changes (store/model/streams.ts NOTIFIED_PREFIX).
 */
export const NOTIFIED_SQL = "SELECT key, value FROM meta WHERE key LIKE 'notified:%'";

/** The newest list of every lister, as stored in `meta` (listings, below). */
export const LISTINGS_SQL = "SELECT value FROM meta WHERE key LIKE 'listed_by:%'";

function prepare(db: Db) {
  return {
    ensure: db.prepare(
      'INSERT INTO sync_state (stream, campaign_id, endpoint, report_type) VALUES (?, ?, ?, ?) ON CONFLICT (stream) DO NOTHING',
    ),
    cursor: db.prepare('SELECT cursor FROM sync_state WHERE stream = ?').pluck().safeIntegers(true),
    // Compare-and-set: the checkpoint moves only from the cursor this stream last committed.
    advance: db.prepare('UPDATE sync_state SET cursor = ?, records = records + ? WHERE stream = ? AND cursor IS ?'),
    count: db.prepare('UPDATE sync_state SET records = max(0, records + ?) WHERE stream = ?'),
    success: db.prepare('UPDATE sync_state SET last_success_at = ?, last_error = NULL, last_error_at = NULL WHERE stream = ?'),
    failure: db.prepare('UPDATE sync_state SET last_error = ?, last_error_at = ? WHERE stream = ?'),
    all: db.prepare(`${STREAMS_SQL} ORDER BY s.campaign_id, s.endpoint, s.report_type`).safeIntegers(true),
    listings: db.prepare(LISTINGS_SQL).pluck(),
    notified: db.prepare(NOTIFIED_SQL),
    setNotified: db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    hasStreams: db.prepare('SELECT 1 FROM sync_state WHERE campaign_id = ? LIMIT 1').pluck(),
    destination: db.prepare("SELECT value FROM meta WHERE key = 'destination'").pluck(),
    erasePending: db.prepare('SELECT 1 FROM meta WHERE key = ?').pluck().bind(ERASE_PENDING_KEY),
    setDestination: db.prepare(
      "INSERT INTO meta (key, value) VALUES ('destination', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
    cursors: db.prepare('SELECT count(*) FROM sync_state WHERE cursor IS NOT NULL').pluck(),
    resetAll: db.prepare('UPDATE sync_state SET cursor = NULL WHERE cursor IS NOT NULL'),
    resetCampaign: db.prepare('UPDATE sync_state SET cursor = NULL WHERE campaign_id = ? AND cursor IS NOT NULL'),
    removeStream: db.prepare('DELETE FROM sync_state WHERE stream = ?'),
  };
}

/** Checkpoints and stream health of one database. */
export class SqliteCheckpoints {
  private readonly s: ReturnType<typeof prepare>;

  constructor(readonly db: Db) {
    this.s = prepare(db);
  }

  ensure(id: StreamId): void {
    this.s.ensure.run(id.key, id.campaignId, id.endpoint, id.reportType);
  }

  cursor(id: StreamId): bigint | undefined {
    const v = this.s.cursor.get(id.key) as bigint | null | undefined;
    return v ?? undefined;
  }

  /**
   * Moves the checkpoint from `move.from` (the cursor this stream last committed) to `move.to`, or
   * only counts records when there is no move. Call inside the page's transaction. A checkpoint that
   * is not where the stream left it means something else wrote it (or a rolled-back group was not
   * noticed): a StorageError, never a silent skip.
   */
  advance(id: StreamId, move: CheckpointMove | undefined, newRecords: number): void {
    if (move === undefined) {
      this.s.count.run(newRecords, id.key);
      return;
    }
    if (this.s.advance.run(move.to, newRecords, id.key, move.from ?? null).changes === 1) return;
    const found = this.cursor(id);
    throw new StorageError(
      `checkpoint of stream ${id.key} is at ${found ?? 'none'}, not at ${move.from ?? 'none'} where this process left it: another process or a restore changed ${this.db.name}; nothing more was written`,
    );
  }

  success(id: StreamId, at: string): void {
    this.s.success.run(at, id.key);
  }

  failure(id: StreamId, message: string, at: string): void {
    this.s.failure.run(message, at, id.key);
  }

  all(): StreamRow[] {
    const listed = listedIds(this.s.listings.all() as string[]);
    const conflicts = new IdConflicts(this.db).perStream();
    const quarantined = new SqliteQuarantine(this.db).perStream();
    return (this.s.all.all() as StreamSqlRow[]).map((row) => ({
      ...streamRow(row, listed, conflicts),
      quarantined: quarantined.get(row.stream) ?? 0,
    }));
  }

  /** The state `--notify` last delivered, by stream. */
  notified(): Map<string, string> {
    const rows = this.s.notified.all() as Array<{ key: string; value: string }>;
    return new Map(rows.map((r) => [r.key.slice(NOTIFIED_PREFIX.length), r.value]));
  }

  /** Records the state `--notify` delivered for a stream. */
  setNotified(stream: string, state: string): void {
    this.s.setNotified.run(NOTIFIED_PREFIX + stream, state);
  }

  /**
   * Checkpoints only make sense for the destination whose records they count: sqlite, or one
   * NDJSON folder. Records `destination` while there are no checkpoints; with checkpoints, another
   * destination is a usage error (it would quietly receive nothing).
   */
  claimDestination(destination: Destination): void {
    const stored = this.s.destination.get() as string | undefined;
    const wanted = encodeDestination(destination);
    if (stored === wanted) return;
    if (stored !== undefined && (this.s.cursors.get() as number) > 0) {
      throw new UsageError(
        `this database's checkpoints are for ${describeDestination(decodeDestination(stored))}, not ${describeDestination(destination)}: a pull would find nothing new; use the same destination, another --db, or \`campaign-sync reset\` to re-read everything into the new one`,
      );
    }
    this.s.setDestination.run(wanted);
  }

  /** Whether a forget was killed or stopped before its erasure finished (store/sqlite/erasure-mark.ts). */
  erasurePending(): boolean {
    return this.s.erasePending.get() !== undefined;
  }

  /** How many streams hold a checkpoint (none after a full reset). */
  checkpointCount(): number {
    return this.s.cursors.get() as number;
  }

  /** The destination this database's checkpoints were last claimed for, if any. */
  destination(): Destination | undefined {
    const stored = this.s.destination.get() as string | undefined;
    return stored === undefined ? undefined : decodeDestination(stored);
  }

  /** Whether any stream of the campaign has a row (a checkpoint, or one to come). */
  hasStreams(campaignId: string): boolean {
    return this.s.hasStreams.get(campaignId) !== undefined;
  }

  /**
   * Forgets checkpoints (not data, not counts) of every stream or of the given campaigns, and removes
   * the rows of their retired streams (`type_changed_to`): nothing syncs those again. Returns how
   * many checkpoints were forgotten and which retired streams went.
   */
  reset(campaignIds: string[]): { forgotten: number; removed: string[] } {
    const removed = retiredStreams(this.all(), campaignIds);
    const conflicts = new IdConflicts(this.db);
    return this.db.transaction(() => {
      for (const stream of removed) {
        this.s.removeStream.run(stream);
        conflicts.forget(stream);
      }
      // With no checkpoint left, claimDestination lets the database feed another destination.
      const forgotten =
        campaignIds.length === 0
          ? this.s.resetAll.run().changes
          : campaignIds.reduce((n, id) => n + this.s.resetCampaign.run(id).changes, 0);
      return { forgotten, removed };
    })();
  }
}
