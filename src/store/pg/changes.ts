/**
 * Change numbers of the PostgreSQL mirror (schema 6, made by store/pg/migrations/v6.ts) for
 * `export --since-last <consumer>`, with the SQLite mirror's semantics (store/sqlite/changes.ts): every page
 * takes a number and stamps the results it inserts or changes with it (`change_seq`; a record read
 * again unchanged keeps its number); a result reconcile --prune deletes leaves a tombstone with the
 * number of its write; an export gives what is numbered above the consumer's last number, up to the
 * window's end, and remembers that end (`export_consumers`) once its file is in place.
 *
 * The invariant: no export skips a change. Numbers come from the sequence `change_counter`, which
 * never waits: writers (on any host) commit out of number order, and one that rolls back leaves a
 * gap. So every number is taken by a transaction that holds the schema's change lock (an advisory
 * lock, CHANGE_LOCK) in shared mode, taken before the number and held until that transaction ends.
 * An export's window ends at the sequence's last value read under that lock held exclusively, in a
 * transaction of its own that ends before the export's snapshot is taken: then no transaction that took a number is running, so every number up to
 * that value is either committed (seen by every snapshot taken afterwards: the export's) or rolled
 * back (a gap nothing will fill), and every number taken later is higher. Changes numbered above the
 * end that the export's snapshot already sees are left to the next export.
 *
 * Writers pay one shared lock per page (no wait, no round trip: a CTE of the page's first
 * statement). An export holds new pages back only while the pages under way finish, at most
 * HORIZON_WAIT_MS. Rows stored before version 6 have no number: a consumer's first export takes them.
 */
import type pg from 'pg';
import { errorCode, LockedError } from '../../errors.js';
import type { DeletionReason } from '../model/erasure-plan.js';
import {
  EXPORT_TABLES,
  type ExportTable,
  FEEDS,
  RESULT_ID_COLUMN,
  type ResultKind,
  type ResultTable,
  readersOf,
  tombstonesRead,
} from '../model/export-tables.js';
import { type FeedDialect, feedSql } from '../model/feed-sql.js';
import type { PgDatabase } from './database.js';
import { cursorRows, type PgSelect, pgSelect } from './export.js';
import { MIRROR_SCHEMA } from './schema.js';

/**
 * The schema's change lock: one bigint key, as the pages' tickets (statements.ts withTicket; two-key
 * locks are older versions' stream locks, lock.ts), whose low 32 bits are never all ones as this one's are.
 */
const CHANGE_LOCK = `(hashtext('campaign-sync changes ' || ${MIRROR_SCHEMA})::bigint << 32) + 4294967295`;

/**
 * CTEs of a page's first statement: `change_lock` takes the change lock shared, then `change` the
 * page's number. Materialised (volatile), so evaluated once, the lock first, and only if used.
 */
export const CHANGE_CTES = `change_lock AS (SELECT pg_advisory_xact_lock_shared(${CHANGE_LOCK})), change AS (SELECT nextval('change_counter') AS seq FROM change_lock)`;

/**
 * A CTE after `w` (the page's upsert, with CHANGE_CTES): when the page's number was taken and the
 * page's request id (parameter `$request`), recorded when the page wrote a row (schema 7: the
 * valid_from and request_id of the versions it brought; the triggers, which fire after the
 * statement, find it there). A page that changes nothing records nothing.
 */
export function seenCte(request: number): string {
  return `seen AS (INSERT INTO change_times (seq, at, request_id) SELECT seq, date_trunc('milliseconds', now()), $${request}::text FROM change WHERE EXISTS (SELECT 1 FROM w) ON CONFLICT (seq) DO NOTHING)`;
}

/** Records the request id `$1` of the page whose number this transaction took, for rows a later statement of the page changed. */
export const SEEN_LATER = `INSERT INTO change_times (seq, at, request_id) VALUES (currval('change_counter'), date_trunc('milliseconds', now()), $1::text)
ON CONFLICT (seq) DO UPDATE SET request_id = excluded.request_id`;

/** The page's number in a statement with CHANGE_CTES. */
export const CHANGE_SEQ = '(SELECT seq FROM change)';

/** The page's number in its later statements (same connection, same transaction: taken by its first). */
export const CURRENT_CHANGE = "currval('change_counter')";

/** How long an export waits for the pages under way to end (it holds new ones back meanwhile). */
export const HORIZON_WAIT_MS = 30_000;

/**
 * The window's end: the last number taken, read while no transaction that took one is running. One
 * query, its own implicit transaction, so the exclusive lock is held for its duration only, even if
 * this process dies; the snapshot the export then reads in is taken after it.
 */
const horizon = (waitMs: number) => `SET LOCAL lock_timeout = ${Math.max(1, Math.round(waitMs))};
WITH l AS (SELECT pg_advisory_xact_lock(${CHANGE_LOCK}))
SELECT (CASE WHEN s.is_called THEN s.last_value ELSE 0 END)::text AS seq FROM change_counter s WHERE (SELECT count(*) FROM l) = 1`;

/** A tombstone statement of `table`: the results `$1` still stored, numbered with the write, deleted at `$2`. */
export function tombstoneSql(table: ResultTable): string {
  return `WITH ${CHANGE_CTES} INSERT INTO tombstones (table_name, id, campaign_id, seq, deleted_at)
SELECT '${table}', r.id, r.campaign_id, ${CHANGE_SEQ}, $2::timestamptz FROM ${table} r WHERE r.id = ANY($1::text[])`;
}

/** What a consumer's export reads: the changes numbered in `(from, to]`; `from` -1 for a consumer never seen. */
export interface PgChangeWindow {
  from: number;
  to: number;
}

export interface PgChanges {
  window: PgChangeWindow;
  columns: string[];
  types: string[];
  /**
   * The deletion rows of the window (none on a consumer's first export), in number order: a results
   * table's tombstones, one whose record came back within it left out; or a feed's own (feed-sql.ts).
   */
  tombstones(): AsyncGenerator<{
    id: string;
    campaign_id: string | null;
    deleted_at: string;
    reason: DeletionReason | 'replaced';
    kind?: ResultKind | undefined;
  }>;
  /** The rows changed within the window, by id, as arrays of the chosen columns. */
  rows(): AsyncGenerator<unknown[]>;
  /** Ends the read (after both were read). */
  end(): Promise<void>;
  /** Never throws: the export's own error is the one to report. */
  abort(): void;
}

/** How a feed's SQL (store/model/feed-sql.ts) names the window's ends (`$1`, `$2`) and the time now here. */
const FEED_DIALECT: FeedDialect = { from: '$1::bigint', to: '$2::bigint', now: "date_trunc('milliseconds', now())" };

/**
 * A consumer's changes of the feed of `name`: the window's end (horizon: waiting at most `waitMs`),
 * then the consumer's place, the deletion rows and the rows, all in one snapshot taken after it.
 * `choose` picks the columns.
 */
export async function readPgChanges(
  db: PgDatabase,
  consumer: string,
  name: ExportTable,
  choose: (available: string[]) => string[],
  waitMs = HORIZON_WAIT_MS,
): Promise<PgChanges> {
  const table = EXPORT_TABLES[name].table;
  const feed = feedSql(name, FEED_DIALECT);
  const extra = feed.extra === undefined ? undefined : { column: RESULT_ID_COLUMN, type: 'text', sql: feed.extra };
  const select: PgSelect = await pgSelect(db, table, choose, extra);
  // The window's end is the first statement of a connection of its own (opened: one the server ended
  // while it waited in the pool is replaced, that statement never having run).
  let first: { client: pg.PoolClient; result: pg.QueryResult };
  try {
    first = await db.opened(horizon(waitMs), 'cannot read');
  } catch (err) {
    // A write that kept its number that long is another worker's page waiting on something: try later.
    if (errorCode(err) === '55P03') {
      throw new LockedError(
        `cannot export from ${db.name}: a write of another campaign-sync kept its change number for over ${waitMs / 1000} s; nothing was written: run again`,
      );
    }
    throw err;
  }
  let done = false;
  const c = first.client;
  const release = (broken: boolean) => {
    if (done) return;
    done = true;
    c.release(broken);
  };
  try {
    const results = first.result as unknown as pg.QueryResult[];
    const to = Number(results[results.length - 1]?.rows[0]?.seq ?? 0);
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const last = await c.query<{ seq: string }>('SELECT last_seq::text AS seq FROM export_consumers WHERE name = $1 AND table_name = $2', [
      consumer,
      table,
    ]);
    const seen = last.rows[0]?.seq;
    const window = { from: seen === undefined ? -1 : Number(seen), to };
    const order = select.all.has('id') ? ' ORDER BY t.id' : '';
    const rowsSql = `${select.sql}${feed.rows === undefined ? '' : ` WHERE ${feed.rows}`}${order}`;
    const rowParams = feed.rows === undefined ? [] : [window.from, window.to];
    // A feed given whole (campaigns) has no deletions; a results table's are its tombstones.
    const none = FEEDS[name].reads.length === 0;
    const tombSql =
      feed.deletions ??
      `SELECT b.id, b.campaign_id, b.deleted_at, b.reason FROM tombstones b WHERE b.table_name = $3 AND b.seq > $1 AND b.seq <= $2
      AND NOT EXISTS (SELECT 1 FROM ${table} r WHERE r.id = b.id AND coalesce(r.change_seq, 0) > b.seq AND r.change_seq <= $2) ORDER BY b.seq, b.id`;
    const tombParams = feed.deletions === undefined ? [window.from, window.to, table] : [window.from, window.to];
    const read = async function* <T>(rows: AsyncGenerator<T>): AsyncGenerator<T> {
      try {
        yield* rows;
      } catch (err) {
        throw db.failure(err, 'cannot read');
      }
    };
    return {
      window,
      columns: select.columns,
      types: select.types,
      async *tombstones() {
        if (window.from < 0 || none) return;
        const rows = cursorRows<{
          id: string;
          campaign_id: string | null;
          deleted_at: Date;
          reason: DeletionReason | 'replaced';
          kind?: ResultKind;
        }>(c, 'since_tombstones', tombSql, tombParams);
        for await (const t of read(rows))
          yield { id: t.id, campaign_id: t.campaign_id, deleted_at: t.deleted_at.toISOString(), reason: t.reason, kind: t.kind };
      },
      async *rows() {
        const rows = cursorRows<Record<string, unknown>>(c, 'since_rows', rowsSql, rowParams);
        for await (const r of read(rows)) yield Object.values(select.convert(r));
      },
      async end() {
        try {
          await c.query('COMMIT');
        } catch (err) {
          release(true);
          throw db.failure(err, 'cannot read');
        }
        release(false);
      },
      // The transaction may still be open: the connection is dropped with it.
      abort: () => release(true),
    };
  } catch (err) {
    release(true);
    throw db.failure(err, 'cannot read');
  }
}

/**
 * Remembers that `consumer` has every change of `table` up to `to` (once its file is in place); never
 * moves it back. Then the tombstones every consumer of the table has read go (as SQLite's purgeRead):
 * an erased id is kept only until every recipient was told; the table is vacuumed when one of them
 * came from an erasure, so its dead row versions are reclaimed as the erasure's own are.
 */
export async function rememberPgConsumer(db: PgDatabase, consumer: string, name: ExportTable, to: number, at: string): Promise<void> {
  const table = EXPORT_TABLES[name].table;
  await db.query(
    `INSERT INTO export_consumers (name, table_name, last_seq, exported_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name, table_name) DO UPDATE SET last_seq = greatest(export_consumers.last_seq, excluded.last_seq), exported_at = excluded.exported_at`,
    [consumer, table, to, at],
    'cannot write to',
  );
  let erased = false;
  // The tombstones of each results table the feed reads, once every consumer of a feed reading them has them.
  for (const results of FEEDS[name].reads) {
    const gone = await db.query<{ reason: string }>(
      `DELETE FROM tombstones WHERE table_name = $1
       AND seq <= coalesce((SELECT min(last_seq) FROM export_consumers WHERE table_name = ANY($2::text[])), 9223372036854775807) RETURNING reason`,
      [results, readersOf(results)],
      'cannot write to',
    );
    erased ||= gone.rows.some((r) => r.reason !== 'pruned');
  }
  if (erased) await db.query('VACUUM tombstones', [], 'cannot vacuum');
}

/**
 * What an erasure changed, handed to the consumers of `export --since-last`, in the erasure's
 * transaction (as SQLite's, store/sqlite/erase-rows.ts): one change number, taken under the change
 * lock as a page's is; each result rewritten stamped with it (given again whole); each result removed a
 * tombstone of its id alone, for the tables some consumer reads, written once the rows are gone.
 */
export async function handOnPg(
  c: pg.PoolClient,
  reason: DeletionReason,
  removed: { session: string[]; role: string[] },
  rewritten: { session: string[]; role: string[] },
): Promise<void> {
  if (removed.session.length + removed.role.length + rewritten.session.length + rewritten.role.length === 0) return;
  const taken = await c.query<{ seq: string }>(`WITH ${CHANGE_CTES} SELECT seq::text AS seq FROM change`);
  const seq = taken.rows[0]?.seq;
  await c.query('UPDATE session_results SET change_seq = $1 WHERE id = ANY($2::text[])', [seq, rewritten.session]);
  await c.query('UPDATE role_results SET change_seq = $1 WHERE id = ANY($2::text[])', [seq, rewritten.role]);
  const read: Set<string> = tombstonesRead(
    (await c.query<{ t: string }>('SELECT DISTINCT table_name AS t FROM export_consumers')).rows.map((r) => r.t),
  );
  for (const [table, ids] of [
    ['session_results', removed.session],
    ['role_results', removed.role],
  ] as const) {
    if (ids.length === 0) continue;
    // An earlier tombstone of the id (a prune, the record back since) says more than the id: this one replaces it.
    await c.query('DELETE FROM tombstones WHERE table_name = $1 AND id = ANY($2::text[])', [table, ids]);
    if (!read.has(table)) continue;
    await c.query(
      `INSERT INTO tombstones (table_name, id, campaign_id, seq, deleted_at, reason)
       SELECT $1, x.id, NULL, $2, date_trunc('milliseconds', now()), $3 FROM unnest($4::text[]) AS x(id)`,
      [table, seq, reason, ids],
    );
  }
}
