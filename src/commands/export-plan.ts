/**
 * Where an export's options become its plan (checked before anything is opened), and what a table's
 * export and a --since-last export (export-since.ts) share: the --columns chooser the port takes,
 * how a failure is worded, Parquet with its warnings.
 */

import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ExportSettings } from '../config/command-settings.js';
import { CampaignSyncError, errorCode, StorageError, storageError, UsageError } from '../errors.js';
import type { ByteSink } from '../export/sink.js';
import { chosenColumns, EXPORT_TABLES, type ExportTable } from '../export/tables.js';
import { outputFile } from '../export/target.js';
import { asOfTime } from '../export/timestamp.js';
import type { ExportSource, Rows } from '../store/port.js';
import type { Output } from '../ui/output.js';
import { shellWord } from '../ui/shell.js';

/** What one export does, from its settings: checked before anything is opened. */
export interface ExportPlan {
  table: ExportTable;
  format: 'csv' | 'ndjson' | 'parquet';
  /** The file -o names; undefined for stdout. */
  target: string | undefined;
  /** --campaign as given (an id or a name). */
  campaign: string | undefined;
  since: string | undefined;
  until: string | undefined;
  /** --columns a,b,c, as given. */
  columns: string | undefined;
  rawCsv: boolean;
  /** --safe-csv, as given. */
  safeCsv: boolean;
  /** --since-last: the consumer whose changes are exported. */
  sinceLast: string | undefined;
  /** --as-of: the time whose versions are exported (ISO 8601, UTC, checked). */
  asOf: string | undefined;
}

/** The plan of an export: the combinations that make no sense refused, in the order people read the flags. */
export function planOf(settings: ExportSettings): ExportPlan {
  const target = outputFile(settings.output);
  // The data goes to stdout without -o: there is no room for a document beside it.
  if (settings.json && target === undefined) {
    throw new UsageError(
      `--json prints a summary of the export: give -o <file> for the data${settings.output === '-' ? ' (-o - is stdout)' : ''}`,
    );
  }
  if (!(settings.table in EXPORT_TABLES)) throw new UsageError(`--table: must be one of ${Object.keys(EXPORT_TABLES).join(', ')}`);
  return {
    table: settings.table as ExportTable,
    format: settings.format,
    target,
    campaign: settings.campaign,
    since: settings.since,
    until: settings.until,
    columns: settings.columns,
    rawCsv: settings.rawCsv,
    safeCsv: settings.safeCsv,
    sinceLast: settings.sinceLast,
    asOf: settings.asOf === undefined ? undefined : checkAsOf({ ...settings, asOf: settings.asOf }),
  };
}

/** `--columns` as the port takes it: the names given, checked against the table's. */
export function columnChooser(plan: ExportPlan): ((available: string[]) => string[]) | undefined {
  const given = plan.columns;
  return given === undefined ? undefined : (available) => chosenColumns(given, available, plan.table);
}

/** An error as the export reports it: ours as they are, the database's as the source words them, else the file's. */
export function exportFailure(err: unknown, source: ExportSource, target: string | undefined): unknown {
  if (err instanceof CampaignSyncError) return err;
  const own = source.failure(err);
  if (own !== undefined) return own;
  // An export commits nothing: what a failed write means is that no file was made, and the mirror is as it was.
  const code = errorCode(err);
  if (code === 'ENOENT' && target !== undefined && target !== '-') {
    const folder = dirname(resolve(target));
    if (!existsSync(folder)) {
      return new StorageError(
        `cannot write ${target}: no such file or folder (ENOENT): the folder ${folder} does not exist; create it (mkdir -p ${shellWord(folder)}) or give -o a file in an existing folder`,
        { code, cause: err },
      );
    }
  }
  const after = target === undefined ? 'the mirror is unchanged' : `no file was written at ${target} and the mirror is unchanged`;
  return storageError(err, `cannot write ${target ?? 'stdout'}`, `${after}: fix it and export again`);
}

/**
 * Parquet, its column types from the database's (export/parquet.ts parquetKind), with a warning per
 * column whose cells were not of its type. Loaded only here: hyparquet-writer costs a CSV export tens
 * of milliseconds of module loading it never uses (bench/export.js).
 */
export async function writeParquetRows(
  names: readonly string[],
  types: ReadonlyArray<string | null>,
  rows: Rows,
  sink: ByteSink,
  out: Output,
  signal?: AbortSignal,
): Promise<number> {
  const { parquetKind, writeParquet } = await import('../export/parquet.js');
  const { formatCount } = await import('../ui/table.js');
  const columns = names.map((name, i) => ({ name, kind: parquetKind(name, types[i] ?? null) }));
  const result = await writeParquet(columns, rows, sink, signal);
  for (const [column, n] of result.invalid) {
    const what = columns.find((c) => c.name === column)?.kind === 'timestamp' ? 'ISO 8601 date-times' : "of the column's type";
    out.warn(
      `${column}: ${formatCount(n)} value${n === 1 ? ' is' : 's are'} not ${what}; written as null (CSV and NDJSON keep them as stored)`,
    );
  }
  return result.rows;
}

/** The tables whose versions are kept (result_versions), by the kind of result. */
export const KIND_OF: Record<string, 'session' | 'role'> = { 'session-results': 'session', 'role-results': 'role' };

/** `--as-of`'s value, checked: a bad one is a usage error before anything is opened. A future time is fine. */
export function checkAsOf(flags: { asOf: string; table: string; sinceLast?: string; since?: string; until?: string }): string {
  const at = asOfTime(flags.asOf);
  if (at === null) {
    throw new UsageError(`--as-of: "${flags.asOf}" is not a timestamp; give an ISO 8601 date-time such as 2026-03-01T12:00:00Z, or a date`);
  }
  if (!(flags.table in KIND_OF)) throw new UsageError('--as-of: only session-results and role-results keep their versions');
  if (flags.sinceLast !== undefined) throw new UsageError('--as-of does not go with --since-last');
  if (flags.since !== undefined || flags.until !== undefined) throw new UsageError('--as-of does not go with --since or --until');
  return at;
}
