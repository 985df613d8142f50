/**
 * `export` from a PostgreSQL team mirror: the same tables, filters, formats and file
 * handling as the SQLite export (commands/export.ts), the rows streamed from a server-side cursor.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { resolvePgSchema } from '../config/config.js';
import { ExportInterrupted, errorCode, isAbort, StorageError, storageError, UsageError } from '../errors.js';
import { noRowsWarning, selectedCampaign } from '../export/campaign.js';
import { csvLine } from '../export/csv.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { untilAborted } from '../export/interrupt.js';
import { FileSink, type Sink, StreamSink } from '../export/sink.js';
import { chosenColumns, EXPORT_TABLES, type ExportTable } from '../export/tables.js';
import { ndjsonTransform } from '../export/writers.js';
import { campaignIdsFor, campaignType } from '../store/pg/campaigns.js';
import { PgDatabase } from '../store/pg/database.js';
import { pgExportRows } from '../store/pg/export.js';
import type { Output } from '../ui/output.js';
import { formatCount } from '../ui/table.js';

export interface PgExportJob {
  url: string;
  /** Where the URL came from (--db, CAMPAIGN_SYNC_DB, a profile's key): what a failure to open names. */
  where: string;
  pgSchema: string | undefined;
  table: ExportTable;
  format: 'csv' | 'ndjson' | 'parquet';
  campaign: string | undefined;
  since: string | undefined;
  until: string | undefined;
  rawCsv: boolean;
  target: string | undefined;
  /** `--columns a,b,c`, as given. */
  columns?: string | undefined;
}

/**
 * Parquet from PostgreSQL's column types, mapped as export/parquet.ts maps SQLite's: bigint and
 * integer -> INT64, double precision -> DOUBLE, `*_at` (timestamptz, or score details' text) ->
 * TIMESTAMP, jsonb and text -> UTF-8 string.
 */
async function writePgParquet(
  source: { columns: string[]; types: string[]; rows: AsyncIterable<Record<string, unknown>> },
  sink: Sink,
  out: Output,
) {
  // Loaded only here, as the SQLite export loads it.
  const { parquetKind, writeParquet } = await import('../export/parquet.js');
  const columns = source.columns.map((name, i) => ({ name, kind: parquetKind(name, source.types[i] ?? null) }));
  const arrays = (async function* () {
    for await (const row of source.rows) yield Object.values(row);
  })();
  const result = await writeParquet(columns, arrays, sink);
  for (const [column, n] of result.invalid) {
    const what = columns.find((c) => c.name === column)?.kind === 'timestamp' ? 'ISO 8601 date-times' : "of the column's type";
    out.warn(
      `${column}: ${formatCount(n)} value${n === 1 ? ' is' : 's are'} not ${what}; written as null (CSV and NDJSON keep them as stored)`,
    );
  }
  return result.rows;
}

export async function exportFromPg(job: PgExportJob, out: Output, stdout: Writable, signal?: AbortSignal): Promise<number> {
  const db = await PgDatabase.open(job.url, resolvePgSchema(job.pgSchema), { connections: 2, mustExist: true, where: job.where });
  let partial: PartialFile | undefined;
  let rows = 0;
  try {
    const campaign = job.campaign === undefined ? undefined : selectedCampaign(job.campaign, await campaignIdsFor(db, job.campaign));
    const spec = EXPORT_TABLES[job.table];
    const found = await pgExportRows(db, { ...spec, campaign, since: job.since, until: job.until }, (available) => {
      if (available.length === 0)
        throw new UsageError(`--table ${job.table}: the mirror has no ${spec.table}; run \`campaign-sync pull\` once to upgrade it`);
      return job.columns === undefined ? available : chosenColumns(job.columns, available, job.table);
    });
    // A signal stops the rows (and the cursor) at the next one: exit 130, no file at -o.
    const source = { ...found, rows: untilAborted(found.rows, signal) };
    if (job.target !== undefined) {
      cleanStalePartials(job.target);
      partial = new PartialFile(job.target);
    }
    try {
      if (job.format === 'csv') {
        const sink: Sink = partial !== undefined ? new FileSink(partial.fd) : new StreamSink(stdout, false, signal);
        // Column names are ours, never neutralised.
        sink.write(csvLine(source.columns, true));
        for await (const row of source.rows) {
          if (!sink.write(csvLine(Object.values(row), job.rawCsv))) await sink.drain();
          rows++;
        }
        await sink.end();
      } else if (job.format === 'parquet') {
        const sink: Sink = partial !== undefined ? new FileSink(partial.fd) : new StreamSink(stdout, false, signal);
        rows = await writePgParquet(source, sink, out);
        await sink.end();
      } else {
        const counted = (async function* () {
          for await (const row of source.rows) {
            rows++;
            yield row;
          }
        })();
        await pipeline(counted, ndjsonTransform(), partial?.stream ?? stdout, { end: partial !== undefined });
      }
    } catch (err) {
      // `export … | head` closes the pipe early: that is the reader's choice, not an error.
      if (errorCode(err) === 'EPIPE' && partial === undefined) return 0;
      throw err;
    }
    if (partial !== undefined) {
      partial.commit();
      partial = undefined;
      out.info(`wrote ${formatCount(rows)} rows of ${job.table} to ${job.target}`);
      out.document({ table: job.table, format: job.format, rows, path: job.target });
    }
    // As from SQLite (commands/export.ts): a header only, said why.
    if (campaign !== undefined && job.campaign !== undefined && rows === 0) {
      const type = await campaignType(db, campaign);
      out.warn(noRowsWarning(job.campaign, job.table, type, (job.since ?? job.until) !== undefined));
    }
    return 0;
  } catch (err) {
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(job.target);
    if (err instanceof StorageError || err instanceof UsageError) throw err;
    throw storageError(err, `cannot write ${job.target ?? 'stdout'}`);
  } finally {
    await db.close();
  }
}
