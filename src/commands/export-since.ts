/**
 * `export --since-last <consumer>`: what changed in a table or view since that consumer's previous
 * export of it, whichever mirror holds it (store/sqlite/changes.ts, store/pg/changes.ts): the deletion
 * rows (a result deleted since by reconcile --prune, an erasure, a retention; in a table whose rows
 * belong to results, also a result whose rows are given again whole: store/model/export-tables.ts
 * FEEDS), then the rows inserted or changed, every row ending with `_deleted_at` and
 * `_deleted_reason`, null but on deletion rows. Read in one snapshot; the consumer's place is remembered only
 * once the file is in place under -o, so an export that fails or is interrupted is given again whole
 * next time (a crash between the rename and that commit gives it again too: consumers apply the file
 * as an upsert by id). Its CSV is exact values (no formula prefix) unless --safe-csv: a loader, not a
 * spreadsheet, reads it, and a prefixed `'=x` would be stored as that text.
 */

import { cleanStalePartials, PartialFile } from '../core/fs/partial-file.js';
import { ExportInterrupted, isAbort, UsageError } from '../errors.js';
import { changeRows, DELETION_COLUMNS } from '../export/changes.js';
import { writeCsv } from '../export/csv.js';
import { FileSink } from '../export/sink.js';
import { type ExportTable, feedKeyColumns } from '../export/tables.js';
import type { ChangeRows, ExportSource } from '../store/port.js';
import type { Output } from '../ui/output.js';
import { columnChooser, type ExportPlan, exportFailure, writeParquetRows } from './export-plan.js';

/** A --since-last export: a consumer, a table or view, a file. */
export interface SinceLastJob extends ExportPlan {
  consumer: string;
  table: ExportTable;
  target: string;
}

const CONSUMER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The plan of a --since-last export, checked before anything is opened. */
export function sinceLastJob(plan: ExportPlan, consumer: string): SinceLastJob {
  if (!CONSUMER.test(consumer)) {
    throw new UsageError(
      '--since-last: a consumer name is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
    );
  }
  if (plan.campaign !== undefined || plan.since !== undefined || plan.until !== undefined) {
    throw new UsageError('--since-last exports every change since the last time; it does not go with --campaign, --since or --until');
  }
  if (plan.rawCsv && plan.safeCsv) throw new UsageError('--raw-csv and --safe-csv contradict each other: give one');
  // A deletion row is known by the feed's key alone: a file without it would move the consumer past deletions it cannot apply.
  const key = feedKeyColumns(plan.table);
  if (plan.columns !== undefined) {
    const given = new Set(plan.columns.split(',').map((c) => c.trim()));
    if (!key.every((k) => given.has(k)))
      throw new UsageError(
        `--since-last needs the key among --columns (${key.join(', ')}): ${plan.columns} leaves it out, and a deletion is known by its key alone`,
      );
  }
  if (plan.target === undefined)
    throw new UsageError("--since-last needs -o <file>: the consumer's place is remembered once the file is in place");
  return { ...plan, consumer, target: plan.target };
}

/** What a finished `--since-last` export says: one line for people, and the --json document. */
async function reportSinceLast(
  out: Output,
  job: SinceLastJob,
  counts: { rows: number; tombstones: number },
  window: { from: number; to: number },
): Promise<void> {
  const from = window.from < 0 ? null : window.from;
  if (!out.quiet && !out.json) {
    const { formatCount } = await import('../ui/table.js');
    out.info(
      `wrote ${formatCount(counts.rows)} changed rows and ${formatCount(counts.tombstones)} deletions of ${job.table} for ${job.consumer} to ${job.target}${from === null ? ' (its first export: every row)' : ''}`,
    );
  }
  out.document({
    table: job.table,
    format: job.format,
    rows: counts.rows,
    tombstones: counts.tombstones,
    path: job.target,
    consumer: job.consumer,
    from_change: from,
    to_change: window.to,
  });
}

export async function exportSinceLast(job: SinceLastJob, source: ExportSource, out: Output, signal?: AbortSignal): Promise<number> {
  let partial: PartialFile | undefined;
  let fileSink: FileSink | undefined;
  let reading: ChangeRows | undefined;
  try {
    const changes = await source.changes(job.consumer, job.table, columnChooser(job));
    reading = changes;
    const window = changes.window;
    const columns = [...changes.columns, ...DELETION_COLUMNS];
    cleanStalePartials(job.target);
    partial = new PartialFile(job.target);
    fileSink = new FileSink(partial.fd);
    const { rows, counts } = changeRows(job.table, columns, changes, signal);
    if (job.format === 'csv') await writeCsv(columns, rows, fileSink, { raw: !job.safeCsv, signal });
    else if (job.format === 'ndjson') {
      const { writeNdjson } = await import('../export/writers.js');
      await writeNdjson(columns, rows, fileSink, signal);
    } else await writeParquetRows(columns, [...changes.types, null, null], rows, fileSink, out, signal);
    await fileSink.end();
    await changes.end();
    reading = undefined;
    signal?.throwIfAborted();
    partial.commit();
    partial = undefined;
    await source.remember(job.consumer, job.table, window.to, new Date().toISOString());
    await reportSinceLast(out, job, counts, window);
    return 0;
  } catch (err) {
    await fileSink?.settle();
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(job.target);
    throw exportFailure(err, source, job.target);
  } finally {
    reading?.abort();
  }
}
