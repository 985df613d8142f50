/**
 * The SQL of an export from a SQLite mirror: the SELECT of a table or view with its filters, in row-id
 * order, and the same over row-id ranges with the batch query that joins a range's rows into bytes
 * (export/csv-table.ts). Times are given in their normal form (store/model/times.ts), and days
 * compare on its UTC day.
 */

import { EXPORT_TABLES, type ExportTable, INTERNAL_COLUMNS, TIME_COLUMNS } from '../model/export-tables.js';
import { COLUMNS } from '../model/rows.js';
import { normalTime } from '../model/times.js';
import type { Db } from './db.js';
import { detailRawSql, roleRawSql } from './reassemble.js';

/** The schema version from which DETAILED records are stored once and `raw` is rebuilt (store/model/compact.ts). */
export const COMPACT_SINCE = 6;

/** `raw` as the service sent it, for the tables whose stored `raw` leaves out what other rows hold. */
const FULL_RAW: Partial<Record<string, (alias: string) => string>> = {
  role_results: roleRawSql,
  score_details: detailRawSql,
};

/**
 * The SQL function that gives a stored time in the normal form every export writes (store/model/times.ts
 * normalTime), registered on the export's connection (export-source.ts): SQLite keeps the text as served.
 */
export const TIME_FUNCTION = 'campaign_sync_time';

/** `db`, with TIME_FUNCTION registered: every connection that runs an export's SQL needs it. */
export function withTimeFunction(db: Db): Db {
  db.function(TIME_FUNCTION, { deterministic: true }, normalTime);
  return db;
}

/**
 * A stored time in its normal form. Most are served in it already (JavaScript's form, to the
 * millisecond), which SQLite's own strftime() tells for much less than a call into JavaScript per cell
 * costs (docs/performance.md); strftime() rolls an impossible day over, so a text it gives back
 * unchanged is a time, but for a year 0 and an hour 24, which it keeps as they are.
 */
function normalised(ref: string): string {
  return `CASE WHEN strftime('%Y-%m-%dT%H:%M:%fZ', ${ref}) = ${ref} AND ${ref} >= '0001' AND substr(${ref}, 12, 2) < '24' THEN ${ref} ELSE ${TIME_FUNCTION}(${ref}) END`;
}

/** A column of the export's SELECT (alias `t`): a time column in its normal form, under its own name. */
function selected(c: string): string {
  return TIME_COLUMNS.has(c) ? `${normalised(`t.${quoteIdent(c)}`)} AS ${quoteIdent(c)}` : `t.${quoteIdent(c)}`;
}

/** An SQL identifier, quoted: a column an analyst added may have any name. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export interface ExportFilter {
  campaign?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  /** The database's schema version: from COMPACT_SINCE on, `raw` is rebuilt. */
  schema?: number | undefined;
  /**
   * The name that reaches the table's row id (rowIdName): `rowid` unless a column of that name hides
   * it; null when every name does (rows are then read in the table's own order, without ORDER BY).
   */
  rowid?: string | null | undefined;
  /** `--columns`: only these, in this order (checked by chosenColumns); every column when undefined. */
  columns?: readonly string[] | undefined;
  /** The table's columns as the database has them: the mirror's bookkeeping among them is left out. */
  present?: readonly string[] | undefined;
  /** One more condition on the rows (alias `t`), its parameters bound after the filters' (export --since-last). */
  and?: string | undefined;
  /** Columns after the chosen ones, as `expression AS name` (a feed's own: export --since-last). */
  extra?: string | undefined;
}

/** The name an export's SQL reaches the row id by: `rowid` when the filter does not say. */
function rowIdOf(filter: ExportFilter): string | null {
  return filter.rowid === undefined ? 'rowid' : filter.rowid;
}

/** SQLite's three names for a table's row id, in the order they are tried. */
const ROWID_NAMES = ['rowid', '_rowid_', 'oid'];

/**
 * The first of `rowid`, `_rowid_` and `oid` that no column of the table is named (SQLite compares
 * names without case): an analyst's own column `rowid` hides the row id behind that name, and the
 * export's order and ranges would then read the analyst's values instead. Null when all three are taken.
 */
export function rowIdName(columns: readonly string[]): string | null {
  const taken = new Set(columns.map((c) => c.toLowerCase()));
  return ROWID_NAMES.find((name) => !taken.has(name)) ?? null;
}

/** How `raw` is rebuilt in SQL for this table, when it is stored apart (from schema COMPACT_SINCE on). */
function fullRaw(table: string, filter: ExportFilter): ((alias: string) => string) | undefined {
  return (filter.schema ?? COMPACT_SINCE) >= COMPACT_SINCE ? FULL_RAW[table] : undefined;
}

/** The SELECT for a table and filter; days compare on the UTC day of the time's normal form. */
export function exportQuery(
  name: ExportTable,
  filter: ExportFilter,
  ranged = false,
): { sql: string; params: string[]; select: string; where: string[] } {
  const spec = EXPORT_TABLES[name];
  const where: string[] = [];
  const params: string[] = [];
  if (filter.campaign !== undefined) {
    // `+` keeps SQLite off any index but the table's own B-tree where rows are read by rowid range: the
    // campaign's index, then a sort by rowid, for every range (every batch, export/csv-bytes.ts) grew
    // with the campaign's size squared, and a batch's rows must come in rowid order (a user's index on
    // the day would break it); the range of the table's own B-tree costs what it holds.
    where.push(`${ranged ? '+' : ''}t.${spec.campaignColumn} = ?`);
    params.push(filter.campaign);
  }
  // The UTC day, as on PostgreSQL: an offset's local date is not the day the export files it under.
  const day = `substr(${TIME_FUNCTION}(t.${spec.dateColumn}), 1, 10)`;
  if (filter.since !== undefined) {
    where.push(`${ranged ? '+' : ''}${day} >= ?`);
    params.push(filter.since);
  }
  if (filter.until !== undefined) {
    where.push(`${ranged ? '+' : ''}${day} <= ?`);
    params.push(filter.until);
  }
  if (filter.and !== undefined) where.push(filter.and);
  // rowid order is insertion order: stable, and free (no sort, no temp B-tree, constant memory). With
  // no name left for the row id, a scan of the table's B-tree yields that same order, unpromised.
  const rowid = 'view' in spec ? null : rowIdOf(filter);
  const order = rowid === null ? '' : ` ORDER BY t.${rowid}`;
  const full = fullRaw(spec.table, filter);
  const column = (c: string) => (c === 'raw' && full !== undefined ? `${full('t')} AS raw` : selected(c));
  // Every column in the table's order (its key, then store/model/rows.ts's list), `raw` rebuilt where it is
  // stored apart, times in their normal form; or the columns asked for, in the order asked.
  const select =
    filter.columns !== undefined
      ? filter.columns.map(column).join(', ')
      : full !== undefined
        ? ['id', ...COLUMNS[spec.table as 'role_results' | 'score_details']].map(column).join(', ')
        : filter.present?.some((c) => INTERNAL_COLUMNS.has(c) || TIME_COLUMNS.has(c))
          ? filter.present
              .filter((c) => !INTERNAL_COLUMNS.has(c))
              .map(column)
              .join(', ')
          : 't.*';
  const filtered = where.length ? ` WHERE ${where.join(' AND ')}` : '';
  const more = filter.extra === undefined ? '' : `, ${filter.extra}`;
  return { sql: `SELECT ${select}${more} FROM ${spec.table} t${filtered}${order}`, params, select, where };
}

/**
 * The same SELECT over one range of rowids (`rowid >= ? AND rowid <= ?`, bound after `params`), the
 * rowid added as a last column; and, given the columns as described, the batch query of the same range.
 * CSV export reads the table through them in one read transaction (export/csv-table.ts).
 */
export function exportRangeQuery(
  name: ExportTable,
  filter: ExportFilter,
  described?: readonly DescribedColumn[],
): { sql: string; params: string[]; batch?: BatchQuery } {
  const { select, where, params } = exportQuery(name, filter, true);
  const table = EXPORT_TABLES[name].table;
  const rowid = rowIdOf(filter);
  if (rowid === null) throw new Error(`${table}: no name reaches the row id (rowIdName)`);
  // Both ends included: a range ending at the largest rowid (2^63 - 1) has no end past it to bind.
  const conditions = [...where, `t.${rowid} >= ?`, `t.${rowid} <= ?`].join(' AND ');
  const batch = described === undefined ? undefined : batchQuery(name, filter, described, conditions, rowid);
  return {
    ...(batch === undefined ? {} : { batch }),
    sql: `SELECT ${select}, t.${rowid} FROM ${table} t WHERE ${conditions} ORDER BY t.${rowid}`,
    params,
  };
}

/** A column of the export's SELECT as better-sqlite3 describes it: its name, its table column (null for an expression) and declared type. */
export interface DescribedColumn {
  name: string;
  column: string | null;
  type: string | null;
}

/** The SELECT of a batch of a rowid range's rows as one blob (export/csv-bytes.ts), and which of its cells carry their type. */
export interface BatchQuery {
  /** Bound like the range SELECT, then a LIMIT; answers the blob (null for no rows), the row count and the last rowid. */
  sql: string;
  typed: boolean[];
}

/** SQLite's affinity rule: a declared type naming INT is INTEGER; one naming CHAR, CLOB or TEXT is TEXT. */
function textAffinity(type: string | null): boolean {
  const t = (type ?? '').toUpperCase();
  return !t.includes('INT') && (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT'));
}

/**
 * The first LIMIT rows of a rowid range joined into one blob by SQLite: a row's cells by concat()
 * (NULL as empty) with U+001F between them, the rows by group_concat() with U+001E between them, in
 * rowid order (the table's own B-tree, the one index the conditions leave usable: exportQuery). A
 * column of TEXT affinity holds text (or a blob, read as its text); any other cell is preceded by its
 * typeof() so that numbers are written as JavaScript writes them and a text in a number column is
 * still a text. The one expression, `raw` rebuilt (FULL_RAW), is text. Undefined when the SELECT holds
 * anything else: the export then reads cells.
 */
function batchQuery(
  name: ExportTable,
  filter: ExportFilter,
  described: readonly DescribedColumn[],
  conditions: string,
  rowid: string,
): BatchQuery | undefined {
  const spec = EXPORT_TABLES[name];
  const full = fullRaw(spec.table, filter);
  const parts: string[] = [];
  const typed: boolean[] = [];
  for (const c of described) {
    if (c.column === null && TIME_COLUMNS.has(c.name) && /^[a-z_]+$/.test(c.name)) {
      // A time in its normal form (TIME_FUNCTION): never the empty text, nor one starting with a separator.
      parts.push(normalised(`t.${c.name}`));
      typed.push(false);
    } else if (c.column === null) {
      if (full === undefined) return undefined;
      parts.push(full('t'));
      typed.push(false);
    } else if (!/^[a-z_]+$/.test(c.column)) {
      return undefined;
    } else if (textAffinity(c.type)) {
      // The empty text (or blob) is EMPTY, so that it differs from NULL (nothing); a real cell that
      // starts with EMPTY is made to break the batch's structure, which then reads it as cells.
      parts.push(
        `CASE WHEN t.${c.column} IN ('', X'') THEN char(29) WHEN unicode(t.${c.column}) = 29 THEN char(31) ELSE t.${c.column} END`,
      );
      typed.push(false);
    } else {
      parts.push(`typeof(t.${c.column}), t.${c.column}`);
      typed.push(true);
    }
  }
  const row = `concat(${parts.join(', char(31), ')})`;
  // At most LIMIT rows from the range's start: a batch is sized in rows, so a range of sparse rowids
  // (deleted rows, a rowid near 2^63) costs what it holds, not what it spans. A subquery with a LIMIT
  // is never flattened into an aggregate: it runs as a co-routine whose rows group_concat() takes in
  // the order it yields them, the rowid order of the table's B-tree. group_concat(... ORDER BY id)
  // would say so in SQL, but sorts every batch again in a temp B-tree (docs/performance.md). The plan is pinned by test/component/export/ranges.test.ts, the bytes by every export test.
  const rows = `SELECT ${row} AS r, t.${rowid} AS id FROM ${spec.table} t WHERE ${conditions} ORDER BY t.${rowid} LIMIT ?`;
  return {
    sql: `SELECT CAST(group_concat(r, char(30)) AS BLOB), count(*), max(id) FROM (${rows})`,
    typed,
  };
}
