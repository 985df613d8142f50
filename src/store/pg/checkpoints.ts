/**
 * Checkpoints and stream health of the PostgreSQL mirror (`sync_state`), with the semantics of
 * store/sqlite/checkpoints.ts. Cursors are bigint and travel as text, never through a JS number. The sync
 * engine reads a stream's cursor synchronously: the cursors are kept in memory, read when a stream is
 * opened (after its lease is taken, so no other worker moves it) and set when a page commits.
 */
import type pg from 'pg';
import type { CheckpointMove, StreamId } from '../../core/types.js';
import { StorageError } from '../../errors.js';
import { listedIds, NOTIFIED_PREFIX, retiredStreams, type StreamRow, streamRow } from '../model/streams.js';
import type { PgDatabase } from './database.js';
import { quarantineCounts } from './quarantine.js';
import { prepared } from './upserts.js';

/** Every stream, with when its campaign was last listed and its type (store/model/streams.ts streamRow). */
const STREAMS_SQL =
  'SELECT s.*, c.seen_at AS campaign_seen_at, c.type AS campaign_type FROM sync_state s LEFT JOIN campaigns c ON c.id = s.campaign_id';

/** The state `--notify` last delivered, by stream. */
const NOTIFIED_SQL = "SELECT key, value FROM meta WHERE key LIKE 'notified:%'";

/** The newest list of every lister. */
const LISTINGS_SQL = "SELECT value FROM meta WHERE key LIKE 'listed_by:%'";

/** Each stream's count of skipped copies (store/pg/sink.ts records them). */
const CONFLICT_COUNTS_SQL = 'SELECT stream, count(*) AS n FROM id_conflicts GROUP BY stream';

type RawRow = Omit<
  StreamRow,
  'cursor' | 'records' | 'last_success_at' | 'last_error_at' | 'unlisted_since' | 'type_changed_to' | 'id_conflicts'
> & {
  cursor: string | null;
  records: string;
  last_success_at: Date | null;
  last_error_at: Date | null;
  campaign_seen_at: Date | null;
  campaign_type: string | null;
};

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export class PgCheckpoints {
  private readonly cursors = new Map<string, bigint | undefined>();

  constructor(private readonly db: PgDatabase) {}

  cursor(id: StreamId): bigint | undefined {
    return this.cursors.get(id.key);
  }

  /** Makes sure the stream has its row, and reads its cursor. */
  async open(id: StreamId): Promise<void> {
    await this.db.query(
      'INSERT INTO sync_state (stream, campaign_id, endpoint, report_type) VALUES ($1, $2, $3, $4) ON CONFLICT (stream) DO NOTHING',
      [id.key, id.campaignId, id.endpoint, id.reportType],
      'cannot write to',
    );
    const r = await this.db.query<{ cursor: string | null }>('SELECT cursor FROM sync_state WHERE stream = $1', [id.key]);
    const v = r.rows[0]?.cursor;
    this.cursors.set(id.key, v === null || v === undefined ? undefined : BigInt(v));
  }

  /**
   * In the page's transaction: moves the checkpoint from `move.from` to `move.to` (compare-and-set),
   * or only counts records. Returns what to call once the transaction has committed.
   */
  async advance(client: pg.ClientBase, id: StreamId, move: CheckpointMove | undefined, newRecords: number): Promise<() => void> {
    if (move === undefined) {
      await client.query('UPDATE sync_state SET records = greatest(0, records + $1) WHERE stream = $2', [newRecords, id.key]);
      return () => {};
    }
    const r = await prepared(
      client,
      'UPDATE sync_state SET cursor = $1, records = records + $2 WHERE stream = $3 AND cursor IS NOT DISTINCT FROM $4::bigint',
      [move.to, newRecords, id.key, move.from ?? null],
    );
    if (r.rowCount !== 1) throw await this.conflict(id, move);
    return () => this.moved(id, move);
  }

  /** After the page that moved the checkpoint committed. */
  moved(id: StreamId, move: CheckpointMove | undefined): void {
    if (move !== undefined) this.cursors.set(id.key, move.to);
  }

  /** The error of a page whose checkpoint another process moved (nothing of the page was written). */
  async conflict(id: StreamId, move: CheckpointMove): Promise<StorageError> {
    const found = await this.db.query<{ cursor: string | null }>('SELECT cursor FROM sync_state WHERE stream = $1', [id.key]);
    return new StorageError(
      `checkpoint of stream ${id.key} is at ${found.rows[0]?.cursor ?? 'none'}, not at ${move.from ?? 'none'} where this process left it: another process or a restore changed ${this.db.name}; nothing more was written`,
    );
  }

  /**
   * Records how the stream's pass ended, at the server's clock (no worker's: store/pg/server-clock.ts);
   * on `client` (in its transaction) when given.
   */
  async end(id: StreamId, error: string | undefined, client?: pg.ClientBase): Promise<void> {
    const q = (text: string, values: unknown[]) =>
      client === undefined ? this.db.query(text, values, 'cannot write to') : client.query(text, values);
    if (error === undefined)
      await q('UPDATE sync_state SET last_success_at = clock_timestamp(), last_error = NULL, last_error_at = NULL WHERE stream = $1', [
        id.key,
      ]);
    else await q('UPDATE sync_state SET last_error = $1, last_error_at = clock_timestamp() WHERE stream = $2', [error, id.key]);
  }

  /** Every stream's row, as store/sqlite/checkpoints.ts returns them (bigint cursors, ISO times). */
  async all(): Promise<StreamRow[]> {
    const listings = await this.db.query<{ value: string }>(LISTINGS_SQL);
    const listed = listedIds(listings.rows.map((r) => r.value));
    const r = await this.db.query<RawRow>(`${STREAMS_SQL} ORDER BY s.campaign_id, s.endpoint, s.report_type NULLS FIRST`);
    const conflicts = await this.conflictCounts();
    const quarantined = await quarantineCounts(this.db);
    return r.rows.map((row) => ({
      ...streamRow(
        {
          ...row,
          cursor: row.cursor === null ? null : BigInt(row.cursor),
          records: BigInt(row.records),
          last_success_at: iso(row.last_success_at),
          last_error_at: iso(row.last_error_at),
          campaign_seen_at: iso(row.campaign_seen_at),
        },
        listed,
        conflicts,
      ),
      quarantined: quarantined.get(row.stream) ?? 0,
    }));
  }

  /** Each stream's count of records skipped for an id another campaign holds (store/sqlite/conflicts.ts). */
  private async conflictCounts(): Promise<Map<string, number>> {
    // A mirror read without migrating it (status) may be of a schema before the table.
    const exists = await this.db.query<{ t: string | null }>("SELECT to_regclass('id_conflicts')::text AS t");
    if (exists.rows[0]?.t === null || exists.rows[0]?.t === undefined) return new Map();
    const r = await this.db.query<{ stream: string; n: string }>(CONFLICT_COUNTS_SQL);
    return new Map(r.rows.map((row) => [row.stream, Number(row.n)]));
  }

  /** The state `--notify` last delivered, by stream (store/sqlite/checkpoints.ts). */
  async notified(): Promise<Map<string, string>> {
    const r = await this.db.query<{ key: string; value: string }>(NOTIFIED_SQL);
    return new Map(r.rows.map((row) => [row.key.slice(NOTIFIED_PREFIX.length), row.value]));
  }

  /** Records the state `--notify` delivered for a stream. */
  async setNotified(stream: string, state: string): Promise<void> {
    await this.db.query(
      'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [NOTIFIED_PREFIX + stream, state],
      'cannot write to',
    );
  }

  /** Whether any stream of the campaign has a row. */
  async hasStreams(campaignId: string): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM sync_state WHERE campaign_id = $1 LIMIT 1', [campaignId])).rowCount !== 0;
  }

  /**
   * Forgets checkpoints (not data, not counts) of every stream or of the given campaigns, and removes
   * their retired streams (store/sqlite/checkpoints.ts reset); `rows` are every stream's, read under the locks.
   */
  async reset(campaignIds: string[], rows: readonly StreamRow[]): Promise<{ forgotten: number; removed: string[] }> {
    const removed = retiredStreams(rows, campaignIds);
    return this.db.transaction(async (client) => {
      if (removed.length > 0) {
        await client.query('DELETE FROM id_conflicts WHERE stream = ANY($1::text[])', [removed]);
        await client.query('DELETE FROM sync_state WHERE stream = ANY($1::text[])', [removed]);
      }
      const r =
        campaignIds.length === 0
          ? await client.query('UPDATE sync_state SET cursor = NULL WHERE cursor IS NOT NULL')
          : await client.query('UPDATE sync_state SET cursor = NULL WHERE campaign_id = ANY($1::text[]) AND cursor IS NOT NULL', [
              campaignIds,
            ]);
      return { forgotten: r.rowCount ?? 0, removed };
    });
  }
}
