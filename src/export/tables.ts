/**
 * What `export --table` takes: the tables of the mirror (store/model/export-tables.ts) checked
 * against the choices cli.ts offers, `--columns` checked against a table's columns, and which columns
 * hold JSON text. Each backend reads the rows its own way (store/sqlite/export-source.ts,
 * store/pg/export-source.ts).
 */
import type { CHOICES } from '../config/defaults.js';
import { UsageError } from '../errors.js';
import type { ExportTable } from '../store/model/export-tables.js';

export { EXPORT_TABLES, type ExportTable, FEEDS, feedKeyColumns, isView } from '../store/model/export-tables.js';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Exactly the tables `--table` offers (cli.ts): a table added to one list and not the other fails tsc. */
export const TABLES_OFFERED: Same<(typeof CHOICES.table)[number], ExportTable> = true;

/** Columns that hold JSON text: NDJSON export embeds them as JSON values (the views' strengths and growths are JSON arrays). */
export const JSON_COLUMNS = new Set(['raw', 'feedback', 'additional_scores', 'strengths', 'growths']);

/**
 * `--columns a,b,c`: the names given, in their order, each one of `available` (the table's or view's
 * columns); a name twice, an empty one or an unknown one is a bad flag value naming it.
 */
export function chosenColumns(given: string, available: readonly string[], table: string): string[] {
  const names = given.split(',').map((n) => n.trim());
  if (names.some((n) => n === ''))
    throw new UsageError('--columns: a column name is empty; give names separated by commas, e.g. --columns id,user_email');
  const seen = new Set<string>();
  for (const name of names) {
    if (!available.includes(name)) {
      throw new UsageError(`--columns: ${table} has no column "${name}"; its columns are ${available.join(', ')}`);
    }
    if (seen.has(name)) throw new UsageError(`--columns: "${name}" is given twice`);
    seen.add(name);
  }
  return names;
}
