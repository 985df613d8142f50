/**
 * Where the records of a database that keeps an NDJSON pull's state are: the folder of the files it
 * wrote (`ndjson_files`), for an export or a history that finds its tables empty. An export of such a
 * database must not pass for "no results": the records were never in its tables.
 */
import { dirname } from 'node:path';
import type { Db } from './db.js';
import { quoteIdent } from './export-sql.js';

/** The folder of this database's NDJSON files when `table` (a table or view) holds no row; undefined otherwise. */
export function ndjsonFolder(db: Db, table: string): string | undefined {
  const path = db.prepare('SELECT path FROM ndjson_files ORDER BY path LIMIT 1').pluck().get() as string | undefined;
  if (path === undefined) return undefined;
  // Only asked of a database that wrote NDJSON, whose tables are empty: the view's scan is then free.
  if (db.prepare(`SELECT 1 FROM ${quoteIdent(table)} LIMIT 1`).get() !== undefined) return undefined;
  return dirname(path);
}
