import { type Stats, statSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { mirrorOf } from '../app/factory.js';
import { parseDate } from '../config/duration.js';
import { type ExportSettings, resolveSettings } from '../config/settings.js';
import { currentIo } from '../core/io.js';
import { ExportInterrupted, errorCode, isAbort, storageError, UsageError } from '../errors.js';
import { noRowsWarning, selectedCampaign } from '../export/campaign.js';
import { writeCsv } from '../export/csv.js';
import { writeCsvTable } from '../export/csv-table.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { FileSink, type Sink, StreamSink } from '../export/sink.js';
import { chosenColumns, EXPORT_TABLES, type ExportTable, exportQuery, exportRangeQuery, isView, rowIdName } from '../export/tables.js';
import { Campaigns } from '../store/campaigns.js';
import { type Db, openDatabase } from '../store/db.js';
import { canonicalPath } from '../store/lock.js';
import { refuseLinks } from '../store/private-file.js';
import { columnNames, schemaVersion } from '../store/schema.js';
import { Output } from '../ui/output.js';

export interface ExportFlags {
  db?: string;
  pgSchema?: string;
  table: string;
  format?: string;
  output?: string;
  campaign?: string;
  since?: string;
  until?: string;
  rawCsv?: boolean;
  /** `--columns a,b,c`: only these columns, in this order. */
  columns?: string;
  /** `--since-last <consumer>`: only what changed since that consumer's previous export. */
  sinceLast?: string;
  /** `--as-of <timestamp>`: the results as the mirror held them then (commands/export-as-of.ts). */
  asOf?: string;
  quiet?: boolean;
  json?: boolean;
}

/** The files of a SQLite database besides itself: overwriting any of them loses the mirror's data or its lock. */
const DB_FILES = ['', '-wal', '-shm', '-journal', '.lock', '.lock.info'];

/** What an existing -o is, when it is not a regular file a whole export can replace. */
function notAFile(stat: Stats): string | undefined {
  if (stat.isFile()) return undefined;
  if (stat.isDirectory()) return 'is a folder; give a file name';
  const kind = stat.isFIFO()
    ? 'a named pipe'
    : stat.isSocket()
      ? 'a socket'
      : stat.isCharacterDevice() || stat.isBlockDevice()
        ? 'a device'
        : 'not a regular file';
  return `is ${kind}: export puts a whole file in its place; to write into a pipe or a device, leave out -o and redirect stdout`;
}

/**
 * -o is checked before any work: a folder, a pipe or a device (or a link to one) is a bad flag
 * value, since the export would replace it with a file; so is the database being exported, or one
 * of its files (-wal, -shm, the lock), which the export would overwrite with exit 0; and so is any
 * other symbolic link.
 */
function checkOutput(path: string, dbPath: string | undefined): void {
  let stat: Stats | undefined;
  try {
    stat = statSync(path);
  } catch {
    // absent (the usual case) or unreachable: creating the file reports it
  }
  const problem = stat === undefined ? undefined : notAFile(stat);
  if (problem !== undefined) throw new UsageError(`-o ${path}: ${problem}`);
  if (dbPath === undefined) return;
  const target = canonicalPath(path);
  const db = canonicalPath(dbPath);
  const same = DB_FILES.some((suffix) => {
    if (target === `${db}${suffix}`) return true;
    if (stat === undefined) return false;
    try {
      const other = statSync(`${db}${suffix}`);
      return other.ino === stat.ino && other.dev === stat.dev;
    } catch {
      return false;
    }
  });
  if (same) throw new UsageError(`-o ${path}: is the database being exported (${dbPath}) or one of its files; give another file name`);
  // The rename would replace the link, not write through it; but a link planted where an export goes
  // is refused as at every file campaign-sync writes.
  refuseLinks([path], 'give the file its own path, or remove the link');
}

/**
 * The file -o names, or undefined for stdout: no -o, or `-o -` as most tools take it (a file named
 * `-` is `-o ./-`). An empty name is a bad flag value, not a file that cannot be created (74).
 */
function outputFile(given: string | undefined): string | undefined {
  if (given === '') throw new UsageError('-o: the file name is empty; give a file, or - for stdout');
  return given === '-' ? undefined : given;
}

/**
 * `campaign-sync export`: streams one table of the mirror to a file (0600) or stdout. SIGINT/SIGTERM
 * (`signal`) stop it between two chunks: exit 130, and no file at -o.
 */
export async function exportTable(
  flags: ExportFlags,
  stdout: Writable = currentIo().stdout,
  signal?: AbortSignal,
  settings: ExportSettings = resolveSettings('export', flags),
): Promise<number> {
  const out = new Output({ quiet: flags.quiet, json: flags.json });
  const target = outputFile(flags.output);
  // The data goes to stdout without -o: there is no room for a document beside it.
  if (flags.json && target === undefined) {
    throw new UsageError(
      `--json prints a summary of the export: give -o <file> for the data${flags.output === '-' ? ' (-o - is stdout)' : ''}`,
    );
  }
  if (!(flags.table in EXPORT_TABLES)) throw new UsageError(`--table: must be one of ${Object.keys(EXPORT_TABLES).join(', ')}`);
  const format = settings.format;
  const since = flags.since === undefined ? undefined : parseDate(flags.since, '--since');
  const until = flags.until === undefined ? undefined : parseDate(flags.until, '--until');
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);
  // Before anything is opened: said even when the database cannot be reached.
  const mirror = mirrorOf(settings, (text) => out.warn(text));
  const { path: dbPath, where } = mirror.target;
  const pg = mirror.kind === 'pg';
  if (target !== undefined) checkOutput(target, pg ? undefined : dbPath);
  // Parquet is binary, and only whole once its footer is written: to a file, or to a pipe or a
  // redirect, never onto a terminal.
  if (format === 'parquet' && target === undefined && (stdout as { isTTY?: boolean }).isTTY === true) {
    throw new UsageError('--format parquet writes binary data: give -o <file>, or redirect stdout to a file or a pipe');
  }

  if (flags.asOf !== undefined) {
    const asOf = await import('./export-as-of.js');
    const at = asOf.checkAsOf({ ...flags, asOf: flags.asOf });
    const job = {
      table: flags.table,
      asOf: at,
      format,
      campaign: flags.campaign,
      columns: flags.columns,
      rawCsv: flags.rawCsv === true,
      target,
    };
    return asOf.exportAsOf(mirror, job, out, stdout, signal);
  }
  if (flags.sinceLast !== undefined) {
    const sinceLast = await import('./export-since.js');
    sinceLast.checkSinceLast({ ...flags, sinceLast: flags.sinceLast }, target);
    if (pg) {
      const job = {
        consumer: flags.sinceLast,
        table: flags.table as ExportTable,
        format,
        url: dbPath,
        where,
        pgSchema: settings.pgSchema,
        target: target as string,
        columns: flags.columns,
        rawCsv: flags.rawCsv === true,
      };
      return (await import('./export-since-pg.js')).exportSinceLastPg(job, out, signal);
    }
    const job = {
      consumer: flags.sinceLast,
      table: flags.table as ExportTable,
      format,
      dbPath,
      target: target as string,
      columns: flags.columns,
      rawCsv: flags.rawCsv === true,
    };
    return sinceLast.exportSinceLast(job, out, stdout, signal);
  }
  if (pg) {
    const table = flags.table as ExportTable;
    const job = {
      url: dbPath,
      where,
      pgSchema: settings.pgSchema,
      table,
      format,
      campaign: flags.campaign,
      since,
      until,
      target,
      columns: flags.columns,
    };
    return (await import('./export-pg.js')).exportFromPg({ ...job, rawCsv: flags.rawCsv === true }, out, stdout, signal);
  }
  const db: Db = openDatabase(dbPath, { mustExist: true, readonly: true });
  // Written to a private temporary file and renamed at the end (export/file.ts), so a failed export
  // never leaves half a file where a complete one is expected.
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let rows = 0;
  let iterator: IterableIterator<unknown> | undefined;
  try {
    const campaign = flags.campaign === undefined ? undefined : selectedCampaign(flags.campaign, new Campaigns(db).idsFor(flags.campaign));
    const schema = schemaVersion(db);
    const name = flags.table as ExportTable;
    const table = EXPORT_TABLES[name].table;
    const present = columnNames(db, table);
    // The views came with schema 5, and a read-only export does not migrate.
    if (present.length === 0) {
      throw new UsageError(
        `--table ${flags.table}: ${dbPath} has no ${table} (schema ${schema}); run \`campaign-sync pull\` once to upgrade it`,
      );
    }
    // An analyst's own column may be named rowid: the row id is then reached by another of its names.
    // A view has none: it is read row by row.
    const rowid = isView(name) ? null : rowIdName(present);
    const every = { campaign, since, until, schema, rowid, present };
    const filter =
      flags.columns === undefined
        ? every
        : {
            ...every,
            columns: chosenColumns(
              flags.columns,
              db
                .prepare(exportQuery(name, every).sql)
                .columns()
                .map((c) => c.name),
              flags.table,
            ),
          };
    const { sql, params } = exportQuery(name, filter);
    const stmt = db.prepare(sql).safeIntegers(true);
    const described = stmt.columns();
    const columns = described.map((c) => c.name);
    // Row by row (NDJSON, Parquet, CSV without a row id): kept to be ended in `finally`.
    const iterateRows = (): IterableIterator<unknown[]> => {
      const it = stmt.raw(true).iterate(...params) as IterableIterator<unknown[]>;
      iterator = it;
      return it;
    };
    if (target !== undefined) {
      cleanStalePartials(target);
      partial = new PartialFile(target);
    }
    try {
      fileSink = partial !== undefined ? new FileSink(partial.fd) : undefined;
      const sink: Sink = fileSink ?? new StreamSink(stdout, false, signal);
      if (format === 'csv' || format === 'parquet') {
        if (format === 'csv' && rowid === null) {
          // Columns named rowid, _rowid_ and oid all hide the row id that batches are read by: row by row.
          rows = await writeCsv(columns, iterateRows(), sink, { raw: flags.rawCsv === true, signal });
        } else if (format === 'csv') {
          // Rows joined into bytes by SQLite a batch at a time (export/csv-table.ts) where its text is
          // UTF-8: in a UTF-16 database concat() would read a blob's bytes as UTF-16.
          const bytes = db.pragma('encoding', { simple: true }) === 'UTF-8';
          const ranges = exportRangeQuery(flags.table as ExportTable, filter, bytes ? described : undefined);
          rows = await writeCsvTable(db, { ...ranges, columns, raw: flags.rawCsv === true }, sink, signal);
        } else {
          const raw = iterateRows();
          // Loaded only here: hyparquet-writer (like cli-table3 and lossless-json below) costs a CSV
          // export tens of milliseconds of module loading it never uses (bench/export.js).
          const { parquetKind, writeParquet } = await import('../export/parquet.js');
          const { formatCount } = await import('../ui/table.js');
          const result = await writeParquet(
            described.map((c) => ({ name: c.name, kind: parquetKind(c.name, c.type) })),
            raw,
            sink,
            signal,
          );
          rows = result.rows;
          for (const [column, n] of result.invalid) {
            const what =
              parquetKind(column, described.find((c) => c.name === column)?.type ?? null) === 'timestamp'
                ? 'ISO 8601 date-times'
                : "of the column's type";
            out.warn(
              `${column}: ${formatCount(n)} value${n === 1 ? ' is' : 's are'} not ${what}; written as null (CSV and NDJSON keep them as stored)`,
            );
          }
        }
        await sink.end();
      } else {
        const { writeNdjson } = await import('../export/writers.js');
        const raw = iterateRows();
        rows = await writeNdjson(columns, raw, sink, signal);
        await sink.end();
      }
    } catch (err) {
      // `export … | head` closes the pipe early: that is the reader's choice, not an error.
      if (errorCode(err) === 'EPIPE' && partial === undefined) return 0;
      throw err;
    }
    if (partial !== undefined) {
      // A signal that came after the last chunk, or before the first (a small table, a Ctrl-C while
      // the CLI loaded), still means "stop": the file is not put in place.
      signal?.throwIfAborted();
      partial.commit();
      partial = undefined;
      if (!out.quiet && !out.json) {
        const { formatCount } = await import('../ui/table.js');
        out.info(`wrote ${formatCount(rows)} rows of ${flags.table} to ${target}`);
      }
      out.document({ table: flags.table, format, rows, path: target });
    }
    // A campaign of the other kind (a role campaign's session results) gives a file with a header
    // only: said, so that it does not pass for "this campaign has no results yet".
    if (campaign !== undefined && rows === 0) {
      const type = new Campaigns(db).typeOf(campaign);
      out.warn(noRowsWarning(flags.campaign as string, flags.table as ExportTable, type, (since ?? until) !== undefined));
    }
    return 0;
  } catch (err) {
    // A background fdatasync must be done with the descriptor before it is closed.
    await fileSink?.settle();
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(target);
    // Local storage failures exit 74 naming the user's own path, never the temporary file's.
    if (errorCode(err)?.startsWith('SQLITE_')) throw storageError(err, `cannot read ${dbPath}`);
    throw storageError(err, `cannot write ${target ?? 'stdout'}`);
  } finally {
    // The statement stays busy until its iterator ends, and a busy connection cannot close.
    iterator?.return?.();
    db.close();
  }
}
