/**
 * Change numbers (schema 8, made by store/sqlite/migrations/v8.ts): what changed, in order, for
 * `export --since-last <consumer>`. Every write of a page takes the next number of `change_counter` and stamps the results it inserts or changes with
 * it (`change_seq`; a record read again unchanged keeps its number); a result reconcile --prune
 * deletes leaves a tombstone with the number of its write. Numbers are taken inside the writing transaction: a transaction that
 * rolls back gives its number back, and every committed change has a number above those committed
 * before it. An export reads in one snapshot everything numbered above what the consumer had and up
 * to the counter, then remembers the counter for the consumer (`export_consumers`) once its file is
 * in place. Rows stored before version 8 have no number: a consumer's first export takes them all.
 * A tombstone says why its result went (schema 13, `reason`): `pruned` (reconcile --prune: the
 * result's id and campaign id), `erased` or `retention` (an erasure: the result's id alone, never a
 * campaign, a user id or an e-mail; store/sqlite/erase-rows.ts). A result an erasure rewrote (another
 * candidate's part taken out) takes a new number, so every consumer is given it again whole.
 *
 * Tombstones are kept only until every consumer registered for their table has read them, and an
 * erasure writes none for a table no consumer reads: telling the recipients is what keeping an
 * erased id is for (GDPR art. 17(2) and 19), and once all were told the id goes, with no byte of it
 * left in the file (`purgeRead`, then the rebuild the erasure uses).
 */
import type { DeletionReason } from '../model/erasure-plan.js';
import { type ExportTable, FEEDS, type ResultKind, readersOf, tombstonesRead } from '../model/export-tables.js';
import type { FeedDialect } from '../model/feed-sql.js';
import type { Db } from './db.js';

/** The number a write stamps its rows with: the counter as its transaction left it. */
export const CURRENT_SEQ = '(SELECT seq FROM change_counter)';
/**
 * When the write's change number was taken, recorded once the write stamped a row with it (schema 9:
 * the valid_from of the versions it brought, store/sqlite/versions.ts). Triggers record it for changed and
 * pruned rows; a write that inserted or changed rows records it with this, with the request id of
 * its page (bound: NULL when the answer carried none), which the versions it brought keep.
 */
export const SEEN_SQL =
  "INSERT INTO change_times (seq, at, request_id) SELECT seq, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ? FROM change_counter WHERE true ON CONFLICT (seq) DO UPDATE SET request_id = excluded.request_id";
/** Taken by each page's write, in its transaction. */
export const NEXT_SEQ_SQL = 'UPDATE change_counter SET seq = seq + 1';
/** A tombstone of a pruned result, numbered with its write: bound (table, campaign_id, deleted_at, id). */
export const TOMBSTONE_SQL = `INSERT INTO tombstones (table_name, campaign_id, deleted_at, id, seq) SELECT ?, campaign_id, ?, id, ${CURRENT_SEQ} FROM %TABLE% WHERE id = ?`;

/** What a consumer's export reads: the changes numbered in `(from, to]`. */
export interface ChangeWindow {
  /** The consumer's last number; -1 for a consumer never seen (its first export takes every row). */
  from: number;
  /** The counter in the export's snapshot. */
  to: number;
}

/** An erasure's tombstone, numbered with its change, replacing any earlier one of the id: bound (table, deleted_at, id, reason). */
export const ERASED_TOMBSTONE_SQL = `INSERT INTO tombstones (table_name, campaign_id, deleted_at, id, seq, reason) VALUES (?, NULL, ?, ?, ${CURRENT_SEQ}, ?)`;

/**
 * The results tables whose tombstones some consumer of `export --since-last` reads, through the feed
 * of any table or view (an erasure writes tombstones for those only).
 */
export function consumedTables(db: Db): Set<string> {
  return tombstonesRead(db.prepare('SELECT DISTINCT table_name FROM export_consumers').pluck().all() as string[]);
}

/**
 * Deletes the tombstones of the results tables the feed of `name` reads that every consumer of a feed
 * reading them has read (all of them when none is: a consumer's first export takes rows, never
 * tombstones). Returns how many of them came from an erasure: their ids must then leave the file too
 * (a rebuild). Call with secure_delete on.
 */
export function purgeRead(db: Db, name: ExportTable): number {
  let erased = 0;
  for (const table of FEEDS[name].reads) {
    const readers = readersOf(table);
    const gone = db
      .prepare(
        `DELETE FROM tombstones WHERE table_name = ?
         AND seq <= coalesce((SELECT min(last_seq) FROM export_consumers WHERE table_name IN (${readers.map(() => '?').join(', ')})), 9223372036854775807) RETURNING reason`,
      )
      .pluck()
      .all(table, ...readers) as string[];
    erased += gone.filter((r) => r !== 'pruned').length;
  }
  return erased;
}

/** The consumer's window, read in the caller's snapshot (a read transaction). */
export function changeWindow(db: Db, consumer: string, table: string): ChangeWindow {
  const to = Number(db.prepare('SELECT seq FROM change_counter').pluck().get() ?? 0);
  const last = db.prepare('SELECT last_seq FROM export_consumers WHERE name = ? AND table_name = ?').pluck().get(consumer, table);
  return { from: last === undefined ? -1 : Number(last), to };
}

/** How a feed's SQL (store/model/feed-sql.ts) names the window's ends and the time now here: bound by name. */
export const FEED_DIALECT: FeedDialect = { from: '@from', to: '@to', now: "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')" };

/**
 * The tombstones of a window, for a consumer that had an earlier export (a first one never held the
 * rows): id, campaign id, when, in order; one whose record came back since is left out (its row is exported).
 */
export function tombstonesIn(
  db: Db,
  table: string,
  w: ChangeWindow,
): IterableIterator<{ id: string; campaign_id: string | null; deleted_at: string; reason: DeletionReason }> {
  if (w.from < 0) return [][Symbol.iterator]();
  return db
    .prepare(
      `SELECT b.id, b.campaign_id, b.deleted_at, b.reason FROM tombstones b WHERE b.table_name = @table AND b.seq > @from AND b.seq <= @to
       AND NOT EXISTS (SELECT 1 FROM ${table} r WHERE r.id = b.id AND coalesce(r.change_seq, 0) > b.seq) ORDER BY b.seq`,
    )
    .iterate({ table, from: w.from, to: w.to }) as IterableIterator<{
    id: string;
    campaign_id: string | null;
    deleted_at: string;
    reason: DeletionReason;
  }>;
}

/** Remembers that `consumer` has every change of `table` up to `to` (once its file is in place). */
export function rememberConsumer(db: Db, consumer: string, table: string, to: number, at: string): void {
  db.prepare(
    `INSERT INTO export_consumers (name, table_name, last_seq, exported_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (name, table_name) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq), exported_at = excluded.exported_at`,
  ).run(consumer, table, to, at);
}

/** The columns a SELECT gives (name, declared type), without running it. */
export function describeSelect(db: Db, sql: string): Array<{ name: string; type: string | null }> {
  return db
    .prepare(sql)
    .columns()
    .map((c) => ({ name: c.name, type: c.type }));
}

/** A deletion row as a feed's SQL gives it (store/model/feed-sql.ts). */
export interface FeedDeletion {
  kind: ResultKind;
  id: string;
  campaign_id: null;
  deleted_at: string;
  reason: DeletionReason | 'replaced';
}

/**
 * A consumer's changes of a feed, read in one snapshot (a read transaction, ended by end() or
 * abort()): the window of the consumer's place in `place` (the table's SQL name), then its deletion
 * rows (`deletions`, the feed's own SQL; otherwise the tombstones of `place`, a results table) and the
 * rows of `sql` (the export's SELECT with the feed's condition, bound by name), rows as arrays, int64 exact.
 */
export function readChanges(db: Db, consumer: string, place: string, sql: string, deletions: string | null | undefined) {
  const stmt = db.prepare(sql).safeIntegers(true);
  const own = deletions === undefined || deletions === null ? undefined : db.prepare(deletions);
  db.exec('BEGIN');
  const window = changeWindow(db, consumer, place);
  // Kept to be ended first: a statement still iterating keeps the connection busy.
  const open: Array<IterableIterator<unknown>> = [];
  const track = <T>(it: IterableIterator<T>) => {
    open.push(it as IterableIterator<unknown>);
    return it;
  };
  const params = { from: window.from, to: window.to };
  const bound = (text: string) => Object.fromEntries(Object.entries(params).filter(([k]) => text.includes(`@${k}`)));
  return {
    window,
    tombstones: () => {
      if (deletions === null) return [][Symbol.iterator]();
      if (own === undefined) return track(tombstonesIn(db, place, window));
      if (window.from < 0) return [][Symbol.iterator]();
      return track(own.iterate(params) as IterableIterator<FeedDeletion>);
    },
    rows: () => {
      const b = bound(sql);
      // A feed given whole (campaigns) binds nothing.
      const it = Object.keys(b).length > 0 ? stmt.raw(true).iterate(b) : stmt.raw(true).iterate();
      return track(it as IterableIterator<unknown[]>);
    },
    end: () => {
      if (db.inTransaction) db.exec('COMMIT');
    },
    /** Never throws: the export's own error is the one to report. */
    abort: () => {
      for (const it of open) it.return?.();
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } catch {
        // Closing the connection ends the transaction anyway.
      }
    },
  };
}
