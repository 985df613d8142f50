/**
 * `campaign-sync export`: streams one table of the mirror, whichever database holds it (the
 * ExportSource of store/mirror-port.ts, from app/factory.ts), to a file (0600) or stdout.
 * SIGINT/SIGTERM (`signal`) stop it between two chunks: exit 130, and no file at -o.
 */
import type { Writable } from 'node:stream';
import { mirrorOf } from '../app/factory.js';
import type { ExportSettings } from '../config/settings.js';
import { currentIo } from '../core/io.js';
import { ExportInterrupted, errorCode, isAbort, UsageError } from '../errors.js';
import { noRowsWarning, selectedCampaign } from '../export/campaign.js';
import { writeCsv } from '../export/csv.js';
import { writeCsvTable } from '../export/csv-table.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { untilAborted } from '../export/interrupt.js';
import { FileSink, type Sink, StreamSink } from '../export/sink.js';
import { checkOutput } from '../export/target.js';
import type { ExportSource, Rows } from '../store/mirror-port.js';
import { Output } from '../ui/output.js';
import { columnChooser, type ExportPlan, exportFailure, planOf, writeParquetRows } from './export-plan.js';

export async function exportTable(settings: ExportSettings, stdout: Writable = currentIo().stdout, signal?: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const plan = planOf(settings);
  // Before anything is opened: said even when the database cannot be reached.
  const mirror = mirrorOf(settings, (text) => out.warn(text));
  if (plan.target !== undefined) checkOutput(plan.target, await mirror.ownFiles(), mirror.target.path);
  // Parquet is binary, and only whole once its footer is written: to a file, or to a pipe or a
  // redirect, never onto a terminal.
  if (plan.format === 'parquet' && plan.target === undefined && (stdout as { isTTY?: boolean }).isTTY === true) {
    throw new UsageError('--format parquet writes binary data: give -o <file>, or redirect stdout to a file or a pipe');
  }
  if (plan.sinceLast !== undefined) {
    const sinceLast = await import('./export-since.js');
    const job = sinceLast.sinceLastJob(plan, plan.sinceLast);
    const source = await mirror.exportSource({ forChanges: true });
    try {
      return await sinceLast.exportSinceLast(job, source, out, signal);
    } finally {
      await source.close();
    }
  }
  const source = await mirror.exportSource({ forChanges: false });
  try {
    return await exportRows(plan, source, out, stdout, signal);
  } finally {
    await source.close();
  }
}

/**
 * The table's rows into a private temporary file renamed at the end (export/file.ts), so a failed
 * export never leaves half a file where a complete one is expected; or onto stdout.
 */
async function exportRows(plan: ExportPlan, source: ExportSource, out: Output, stdout: Writable, signal?: AbortSignal) {
  const { target } = plan;
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let rows = 0;
  try {
    const campaign = plan.campaign === undefined ? undefined : selectedCampaign(plan.campaign, await source.campaignIds(plan.campaign));
    const found = await source.rows({ table: plan.table, campaign, since: plan.since, until: plan.until, columns: columnChooser(plan) });
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
      const sink: Sink = fileSink ?? new StreamSink(stdout, false, signal);
      if (plan.format === 'csv') {
        // A table with a row id in SQLite: batches of rows joined into bytes (export/csv-table.ts); else row by row.
        const ranges = found.ranges?.();
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
      if (!out.quiet && !out.json) {
        const { formatCount } = await import('../ui/table.js');
        out.info(`wrote ${formatCount(rows)} rows of ${plan.table} to ${target}`);
      }
      out.document({ table: plan.table, format: plan.format, rows, path: target });
    }
    // A campaign of the other kind (a role campaign's session results) gives a file with a header
    // only: said, so that it does not pass for "this campaign has no results yet".
    if (campaign !== undefined && plan.campaign !== undefined && rows === 0) {
      const type = await source.campaignType(campaign);
      out.warn(noRowsWarning(plan.campaign, plan.table, type, (plan.since ?? plan.until) !== undefined));
    }
    return 0;
  } catch (err) {
    // A background fdatasync must be done with the descriptor before it is closed.
    await fileSink?.settle();
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(target);
    // Local storage failures exit 74 naming the user's own path, never the temporary file's.
    throw exportFailure(err, source, target);
  }
}
