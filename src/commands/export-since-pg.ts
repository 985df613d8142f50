/**
 * `export --since-last <consumer>` from a PostgreSQL team mirror: what commands/export-since.ts
 * gives from SQLite (the rows inserted or changed, then one row per result reconcile --prune
 * deleted, every row with a `_deleted_at` column, null but on those tombstones), read in one snapshot
 * that never misses a change another worker had under way (store/pg/changes.ts). The consumer's
 * place is remembered only once the file is in place under -o.
 */
import { resolvePgSchema } from '../config/config.js';
import { CampaignSyncError, ExportInterrupted, isAbort, storageError } from '../errors.js';
import { csvLine, Encoder } from '../export/csv.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { between, untilAborted } from '../export/interrupt.js';
import { FileSink } from '../export/sink.js';
import { chosenColumns, type ExportTable } from '../export/tables.js';
import { ndjsonLine } from '../export/writers.js';
import { CHANGE_TABLES } from '../store/changes.js';
import { type PgChanges, readPgChanges, rememberPgConsumer } from '../store/pg/changes.js';
import { PgDatabase } from '../store/pg/database.js';
import type { Output } from '../ui/output.js';
import { reportSinceLast } from './export-since.js';

export interface PgSinceLastJob {
  consumer: string;
  table: ExportTable;
  format: 'csv' | 'ndjson' | 'parquet';
  url: string;
  /** Where the URL came from (--db, CAMPAIGN_SYNC_DB, a profile's key): what a failure to open names. */
  where: string;
  pgSchema: string | undefined;
  target: string;
  columns: string | undefined;
  rawCsv: boolean;
}

/** CSV or NDJSON lines into the file, a buffer at a time; returns when the rows run out. */
async function writeLines(rows: AsyncIterable<unknown[]>, line: (row: unknown[]) => string, sink: FileSink, signal?: AbortSignal) {
  const enc = new Encoder(sink);
  for await (const row of rows) {
    enc.line(line(row));
    if (enc.full) {
      if (!enc.flush()) await sink.drain();
      await between(signal);
    }
  }
  if (!enc.flush()) await sink.drain();
}

export async function exportSinceLastPg(job: PgSinceLastJob, out: Output, signal?: AbortSignal): Promise<number> {
  // Read-write: the consumer's place is written here (and an older mirror gets its change numbers).
  const db = await PgDatabase.open(job.url, resolvePgSchema(job.pgSchema), {
    connections: 2,
    mustExist: true,
    upgrade: true,
    where: job.where,
  });
  const table = CHANGE_TABLES[job.table as keyof typeof CHANGE_TABLES];
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let reading: PgChanges | undefined;
  try {
    const changes = await readPgChanges(db, job.consumer, table, (available) =>
      job.columns === undefined ? available : chosenColumns(job.columns, available, job.table),
    );
    reading = changes;
    const window = changes.window;
    const columns = [...changes.columns, '_deleted_at'];
    let tombstones = 0;
    let rows = 0;
    const idAt = columns.indexOf('id');
    const campaignAt = columns.indexOf('campaign_id');
    async function* source(): AsyncGenerator<unknown[]> {
      for await (const t of changes.tombstones()) {
        const row: unknown[] = new Array(columns.length).fill(null);
        if (idAt >= 0) row[idAt] = t.id;
        if (campaignAt >= 0) row[campaignAt] = t.campaign_id;
        row[columns.length - 1] = t.deleted_at;
        tombstones++;
        yield row;
      }
      for await (const r of changes.rows()) {
        rows++;
        yield [...r, null];
      }
    }
    cleanStalePartials(job.target);
    partial = new PartialFile(job.target);
    fileSink = new FileSink(partial.fd);
    const all = untilAborted(source(), signal);
    if (job.format === 'csv') {
      // Column names are ours, never neutralised.
      fileSink.write(csvLine(columns, true));
      await writeLines(all, (row) => csvLine(row, job.rawCsv), fileSink, signal);
    } else if (job.format === 'ndjson') await writeLines(all, (row) => ndjsonLine(columns, row), fileSink, signal);
    else {
      const { parquetKind, writeParquet } = await import('../export/parquet.js');
      const kinds = [
        ...changes.columns.map((name, i) => ({ name, kind: parquetKind(name, changes.types[i] ?? null) })),
        { name: '_deleted_at', kind: parquetKind('_deleted_at', null) },
      ];
      await writeParquet(kinds, all, fileSink, signal);
    }
    await fileSink.end();
    await changes.end();
    reading = undefined;
    signal?.throwIfAborted();
    partial.commit();
    partial = undefined;
    await rememberPgConsumer(db, job.consumer, table, window.to, new Date().toISOString());
    await reportSinceLast(out, job, rows, tombstones, window);
    return 0;
  } catch (err) {
    await fileSink?.settle();
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(job.target);
    // Ours already say what failed (storage 74, a busy mirror 75, a bad --columns 2).
    if (err instanceof CampaignSyncError) throw err;
    throw storageError(err, `cannot write ${job.target}`);
  } finally {
    reading?.abort();
    await db.close();
  }
}
