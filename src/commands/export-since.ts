/**
 * `export --since-last <consumer>`: what changed in a results table since that consumer's previous
 * export (store/changes.ts): the rows inserted or changed, then one row per result deleted since
 * (reconcile --prune), every row with a `_deleted_at` column, null but on those tombstones. Read in
 * one snapshot; the consumer's place is remembered only once the file is in place under -o, so an
 * export that fails or is interrupted is given again whole next time (a crash between the rename and
 * that commit gives it again too: consumers apply the file as an upsert by id).
 */
import type { Writable } from 'node:stream';
import { ExportInterrupted, errorCode, isAbort, storageError, UsageError } from '../errors.js';
import { writeCsv } from '../export/csv.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { FileSink } from '../export/sink.js';
import { chosenColumns, type ExportTable, exportQuery, rowIdName } from '../export/tables.js';
import { CHANGE_TABLES, CHANGED_ROWS, describeSelect, readChanges, rememberConsumer } from '../store/changes.js';
import { openDatabase } from '../store/db.js';
import { columnNames, schemaVersion } from '../store/schema.js';
import type { Output } from '../ui/output.js';

export interface SinceLastJob {
  consumer: string;
  table: ExportTable;
  format: 'csv' | 'ndjson' | 'parquet';
  dbPath: string;
  target: string;
  columns: string | undefined;
  rawCsv: boolean;
}

const CONSUMER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Checked before anything is opened. */
export function checkSinceLast(
  flags: { sinceLast: string; table: string; campaign?: string; since?: string; until?: string },
  target: string | undefined,
): void {
  if (!CONSUMER.test(flags.sinceLast)) {
    throw new UsageError(
      '--since-last: a consumer name is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
    );
  }
  if (!(flags.table in CHANGE_TABLES)) {
    throw new UsageError(`--since-last: exports what changed in ${Object.keys(CHANGE_TABLES).join(' or ')}, not ${flags.table}`);
  }
  if (flags.campaign !== undefined || flags.since !== undefined || flags.until !== undefined) {
    throw new UsageError('--since-last exports every change since the last time; it does not go with --campaign, --since or --until');
  }
  if (target === undefined)
    throw new UsageError("--since-last needs -o <file>: the consumer's place is remembered once the file is in place");
}

/** What a finished `--since-last` export says: one line for people, and the --json document. */
export async function reportSinceLast(
  out: Output,
  job: { table: string; format: string; target: string; consumer: string },
  rows: number,
  tombstones: number,
  window: { from: number; to: number },
): Promise<void> {
  const from = window.from < 0 ? null : window.from;
  if (!out.quiet && !out.json) {
    const { formatCount } = await import('../ui/table.js');
    out.info(
      `wrote ${formatCount(rows)} changed rows and ${formatCount(tombstones)} deletions of ${job.table} for ${job.consumer} to ${job.target}${from === null ? ' (its first export: every row)' : ''}`,
    );
  }
  out.document({
    table: job.table,
    format: job.format,
    rows,
    tombstones,
    path: job.target,
    consumer: job.consumer,
    from_change: from,
    to_change: window.to,
  });
}

export async function exportSinceLast(job: SinceLastJob, out: Output, _stdout: Writable, signal?: AbortSignal): Promise<number> {
  // Read-write: the consumer's place is written here (and an older mirror gets its change numbers).
  const db = openDatabase(job.dbPath, { mustExist: true });
  const table = CHANGE_TABLES[job.table as keyof typeof CHANGE_TABLES];
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let reading: { abort(): void } | undefined;
  try {
    const present = columnNames(db, table);
    const every = { schema: schemaVersion(db), rowid: rowIdName(present), present, and: CHANGED_ROWS };
    const all = describeSelect(db, exportQuery(job.table, every).sql).map((c) => c.name);
    const filter = job.columns === undefined ? every : { ...every, columns: chosenColumns(job.columns, all, job.table) };
    const { sql } = exportQuery(job.table, filter);
    const described = describeSelect(db, sql);
    const columns = [...described.map((c) => c.name), '_deleted_at'];
    // One snapshot for the window, the tombstones and the rows.
    const changes = readChanges(db, job.consumer, table, sql);
    reading = changes;
    const window = changes.window;
    let tombstones = 0;
    let rows = 0;
    const idAt = columns.indexOf('id');
    const campaignAt = columns.indexOf('campaign_id');
    function* source(): Generator<unknown[]> {
      for (const t of changes.tombstones()) {
        const row: unknown[] = new Array(columns.length).fill(null);
        if (idAt >= 0) row[idAt] = t.id;
        if (campaignAt >= 0) row[campaignAt] = t.campaign_id;
        row[columns.length - 1] = t.deleted_at;
        tombstones++;
        yield row;
      }
      for (const r of changes.rows()) {
        rows++;
        yield [...r, null];
      }
    }
    cleanStalePartials(job.target);
    partial = new PartialFile(job.target);
    fileSink = new FileSink(partial.fd);
    if (job.format === 'csv') await writeCsv(columns, source(), fileSink, { raw: job.rawCsv, signal });
    else if (job.format === 'ndjson') {
      const { writeNdjson } = await import('../export/writers.js');
      await writeNdjson(columns, source(), fileSink, signal);
    } else {
      const { parquetKind, writeParquet } = await import('../export/parquet.js');
      const kinds = [
        ...described.map((c) => ({ name: c.name, kind: parquetKind(c.name, c.type) })),
        { name: '_deleted_at', kind: parquetKind('_deleted_at', null) },
      ];
      await writeParquet(kinds, source(), fileSink, signal);
    }
    await fileSink.end();
    changes.end();
    reading = undefined;
    signal?.throwIfAborted();
    partial.commit();
    partial = undefined;
    rememberConsumer(db, job.consumer, table, window.to, new Date().toISOString());
    await reportSinceLast(out, job, rows, tombstones, window);
    return 0;
  } catch (err) {
    await fileSink?.settle();
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(job.target);
    if (errorCode(err)?.startsWith('SQLITE_')) throw storageError(err, `cannot read or write ${job.dbPath}`);
    throw storageError(err, `cannot write ${job.target}`);
  } finally {
    reading?.abort();
    db.close();
  }
}
