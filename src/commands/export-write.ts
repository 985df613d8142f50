/**
 * How an export's rows are written: CSV, NDJSON or Parquet, to a private temporary file put in place
 * at the end, or onto stdout. The table's export and `--as-of` both write through here.
 */
import type { Writable } from 'node:stream';
import { cleanStalePartials, PartialFile } from '../core/fs/partial-file.js';
import { errorCode } from '../errors.js';
import { writeCsv } from '../export/csv.js';
import { writeCsvTable } from '../export/csv-table.js';
import { untilAborted } from '../export/interrupt.js';
import { type ByteSink, FileSink, StreamSink } from '../export/sink.js';
import type { ExportRows, Rows } from '../store/port.js';
import type { Output } from '../ui/output.js';
import { type ExportPlan, writeParquetRows } from './export-plan.js';

/**
 * Rows into a private temporary file renamed at the end (core/fs/partial-file.ts), so a failed export never
 * leaves half a file where a complete one is expected; or onto stdout. Returns how many rows went
 * out (0 when the reader of stdout closed it early); throws what failed, the file discarded.
 */
export async function writeExport(
  plan: ExportPlan,
  found: ExportRows,
  out: Output,
  stdout: Writable,
  signal?: AbortSignal,
): Promise<number> {
  const { target } = plan;
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let rows = 0;
  try {
    // Asynchronous rows (PostgreSQL's) stop at the next one once a signal comes; synchronous ones, between chunks.
    const each = (): Rows => {
      const all = found.rows();
      return Symbol.asyncIterator in all ? untilAborted(all, signal) : all;
    };
    if (target !== undefined) {
      cleanStalePartials(target);
      partial = new PartialFile(target);
    }
    try {
      fileSink = partial !== undefined ? new FileSink(partial.fd) : undefined;
      const sink: ByteSink = fileSink ?? new StreamSink(stdout, false, signal);
      if (plan.format === 'csv') {
        // A table with a row id in SQLite: batches of rows joined into bytes (export/csv-table.ts); else row by row.
        const ranges = found.ranges();
        rows =
          ranges === undefined
            ? await writeCsv(found.columns, each(), sink, { raw: plan.rawCsv, signal })
            : await writeCsvTable(ranges.reader, { batch: ranges.batch, columns: found.columns, raw: plan.rawCsv }, sink, signal);
      } else if (plan.format === 'parquet') {
        rows = await writeParquetRows(found.columns, found.types, each(), sink, out, signal);
      } else {
        // Loaded only here: a CSV export never uses it.
        const { writeNdjson } = await import('../export/writers.js');
        rows = await writeNdjson(found.columns, each(), sink, signal);
      }
      await sink.end();
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
      const asOf = plan.asOf === undefined ? '' : ` as of ${plan.asOf}`;
      if (!out.quiet && !out.json) {
        const { formatCount } = await import('../ui/table.js');
        out.info(`wrote ${formatCount(rows)} rows of ${plan.table}${asOf} to ${target}`);
      }
      out.document({
        table: plan.table,
        format: plan.format,
        rows,
        path: target,
        ...(plan.asOf === undefined ? {} : { as_of: plan.asOf }),
      });
    }
    return rows;
  } catch (err) {
    // A background fdatasync must be done with the descriptor before it is closed.
    await fileSink?.settle();
    partial?.discard();
    throw err;
  }
}
