/**
 * `export` from a SQLite mirror (the ExportSource of store/port.ts): a table's rows as arrays,
 * int64 exact, in row-id order, and by row-id range for CSV's byte path; a consumer's changes in one
 * read transaction (store/sqlite/changes.ts).
 */
import { errorCode, storageError, UsageError } from '../../errors.js';
import { COMPUTED_TYPES, EXPORT_TABLES, type ExportTable, FEEDS, isView, TIME_COLUMNS } from '../model/export-tables.js';
import { feedSql } from '../model/feed-sql.js';
import type { ChangeRows, ExportQuery, ExportRows, ExportSource, MirrorTarget } from '../port.js';
import { Campaigns } from './campaigns.js';
import { describeSelect, FEED_DIALECT, purgeRead, readChanges, rememberConsumer } from './changes.js';
import { type Db, openDatabase } from './db.js';
import { rebuild } from './erase-rows.js';
import { beginErasure, pendingErasure } from './erasure-mark.js';
import { exportQuery, exportRangeQuery, rowIdName, withTimeFunction } from './export-sql.js';
import { ndjsonFolder } from './ndjson-folder.js';
import { columnNames, schemaVersion } from './schema.js';
import { RangeReader } from './snapshot.js';

/**
 * Remembers the consumer's place, then deletes the tombstones every consumer of the table has read
 * (store/sqlite/changes.ts purgeRead): an erased id leaves the file once the last recipient has it,
 * by the rebuild an erasure ends with. A rebuild another connection keeps out (a pull running) is
 * left to the next pull or forget, by the mark of an erasure with nothing left but its rebuild.
 */
function remember(db: Db, consumer: string, name: ExportTable, to: number, at: string): void {
  db.pragma('secure_delete = ON');
  const erased = db.transaction(() => {
    rememberConsumer(db, consumer, EXPORT_TABLES[name].table, to, at);
    return purgeRead(db, name);
  })();
  if (erased > 0 && !rebuild(db) && pendingErasure(db) === undefined) db.transaction(() => beginErasure(db, undefined))();
}

/** The type of a column SQLite leaves undeclared (an expression): a time in its normal form, or a view's computed column. */
function declaredType(name: string): string | null {
  return TIME_COLUMNS.has(name) ? 'TIMESTAMP' : (COMPUTED_TYPES[name] ?? null);
}

export async function openSqliteExport(t: MirrorTarget, opts: { forChanges: boolean }): Promise<ExportSource> {
  const dbPath = t.path;
  // Read-write for --since-last: the consumer's place is written (and an older mirror gets its change numbers).
  const db = opts.forChanges ? openDatabase(dbPath, { mustExist: true }) : openDatabase(dbPath, { mustExist: true, readonly: true });
  // The export's SELECTs give every time in its normal form (export-sql.ts), as PostgreSQL's do.
  withTimeFunction(db);
  // A statement stays busy until its iterator ends, and a busy connection cannot close.
  const open: Array<Iterator<unknown>> = [];
  const track = <T extends Iterator<unknown>>(it: T): T => {
    open.push(it);
    return it;
  };
  const campaigns = () => new Campaigns(db);

  function rows(q: ExportQuery): ExportRows {
    const schema = schemaVersion(db);
    const table = EXPORT_TABLES[q.table].table;
    const present = columnNames(db, table);
    // The views came with schema 5, and a read-only export does not migrate.
    if (present.length === 0) {
      throw new UsageError(
        `--table ${q.table}: ${dbPath} has no ${table} (schema ${schema}); run \`campaign-sync pull\` once to upgrade it`,
      );
    }
    // An analyst's own column may be named rowid: the row id is then reached by another of its names.
    // A view has none: it is read row by row.
    const rowid = isView(q.table) ? null : rowIdName(present);
    const every = { campaign: q.campaign, since: q.since, until: q.until, schema, rowid, present };
    const filter =
      q.columns === undefined
        ? every
        : {
            ...every,
            columns: q.columns(
              db
                .prepare(exportQuery(q.table, every).sql)
                .columns()
                .map((c) => c.name),
            ),
          };
    const { sql, params } = exportQuery(q.table, filter);
    const stmt = db.prepare(sql).safeIntegers(true);
    const described = stmt.columns();
    return {
      columns: described.map((c) => c.name),
      types: described.map((c) => c.type ?? declaredType(c.name)),
      rows: () => track(stmt.raw(true).iterate(...params) as IterableIterator<unknown[]>),
      ranges: () => {
        // Columns named rowid, _rowid_ and oid all hide the row id that ranges are read by: none then.
        if (rowid === null) return undefined;
        // Rows joined into bytes by SQLite a batch at a time where its text is UTF-8: in a UTF-16
        // database concat() would read a blob's bytes as UTF-16.
        const bytes = db.pragma('encoding', { simple: true }) === 'UTF-8';
        const ranged = exportRangeQuery(q.table, filter, bytes ? described : undefined);
        return { reader: new RangeReader(db, ranged.sql, ranged.params, ranged.batch?.sql), batch: ranged.batch };
      },
    };
  }

  function changes(consumer: string, name: ExportTable, choose?: (available: string[]) => string[]): ChangeRows {
    const table = EXPORT_TABLES[name].table;
    const present = columnNames(db, table);
    if (present.length === 0) {
      throw new UsageError(
        `--table ${name}: ${dbPath} has no ${table} (schema ${schemaVersion(db)}); run \`campaign-sync pull\` once to upgrade it`,
      );
    }
    const feed = feedSql(name, FEED_DIALECT);
    const rowid = isView(name) ? null : rowIdName(present);
    const every = { schema: schemaVersion(db), rowid, present, and: feed.rows };
    const all = describeSelect(db, exportQuery(name, every).sql).map((c) => c.name);
    const filter = { ...(choose === undefined ? every : { ...every, columns: choose(all) }), extra: feed.extra };
    const { sql } = exportQuery(name, filter);
    const described = describeSelect(db, sql);
    // One snapshot for the window, the deletion rows and the rows. A feed given whole has no deletions.
    const deletions = FEEDS[name].reads.length === 0 ? null : feed.deletions;
    const read = readChanges(db, consumer, table, sql, deletions);
    return {
      window: read.window,
      columns: described.map((c) => c.name),
      types: described.map((c) => c.type ?? declaredType(c.name) ?? (c.name === '_result_id' ? 'TEXT' : null)),
      tombstones: read.tombstones,
      rows: read.rows,
      end: async () => read.end(),
      abort: read.abort,
    };
  }

  return {
    campaignIds: async (selector) => campaigns().idsFor(selector),
    campaignType: async (id) => campaigns().typeOf(id),
    recordsElsewhere: async (name) => ndjsonFolder(db, EXPORT_TABLES[name].table),
    rows: async (q) => rows(q),
    changes: async (consumer, name, choose) => changes(consumer, name, choose),
    remember: async (consumer, name, to, at) => remember(db, consumer, name, to, at),
    failure: (err) =>
      errorCode(err)?.startsWith('SQLITE_')
        ? storageError(err, `${opts.forChanges ? 'cannot read or write' : 'cannot read'} ${dbPath}`)
        : undefined,
    close: async () => {
      for (const it of open) it.return?.();
      db.close();
    },
  };
}
