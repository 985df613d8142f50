/**
 * `campaign-sync export`: streams one table of the mirror, whichever database holds it (the
 * ExportSource of store/port.ts, from app/factory.ts), to a file (0600) or stdout.
 * SIGINT/SIGTERM (`signal`) stop it between two chunks: exit 130, and no file at -o.
 */
import type { Writable } from 'node:stream';
import { mirrorOf } from '../app/factory.js';
import type { ExportSettings } from '../config/command-settings.js';
import { currentIo } from '../core/io.js';
import { ExportInterrupted, isAbort, UsageError } from '../errors.js';
import { noRowsWarning, recordsElsewhereError, selectedCampaign } from '../export/campaign.js';
import { checkOutput } from '../export/target.js';
import type { ExportSource } from '../store/port.js';
import { Output } from '../ui/output.js';
import { columnChooser, type ExportPlan, exportFailure, planOf } from './export-plan.js';
import { writeExport } from './export-write.js';

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
  if (plan.asOf !== undefined) {
    return (await import('./export-as-of.js')).exportAsOf(mirror, { ...plan, asOf: plan.asOf }, out, stdout, signal);
  }
  if (plan.sinceLast !== undefined) {
    const sinceLast = await import('./export-since.js');
    const job = sinceLast.sinceLastJob(plan, plan.sinceLast);
    const source = await mirror.exportSource({ forChanges: true });
    try {
      // A feed of an empty table would move the consumer past records that are in files instead.
      const elsewhere = await source.recordsElsewhere(job.table);
      if (elsewhere !== undefined) throw recordsElsewhereError(mirror.target.path, job.table, elsewhere);
      return await sinceLast.exportSinceLast(job, source, out, signal);
    } finally {
      await source.close();
    }
  }
  const source = await mirror.exportSource({ forChanges: false });
  try {
    return await exportRows(plan, source, mirror.target.path, out, stdout, signal);
  } finally {
    await source.close();
  }
}

/** The table's rows, as the mirror's export source gives them, written out (writeExport). */
async function exportRows(plan: ExportPlan, source: ExportSource, db: string, out: Output, stdout: Writable, signal?: AbortSignal) {
  try {
    const elsewhere = await source.recordsElsewhere(plan.table);
    if (elsewhere !== undefined) throw recordsElsewhereError(db, plan.table, elsewhere);
    const campaign = plan.campaign === undefined ? undefined : selectedCampaign(plan.campaign, await source.campaignIds(plan.campaign));
    const found = await source.rows({ table: plan.table, campaign, since: plan.since, until: plan.until, columns: columnChooser(plan) });
    const rows = await writeExport(plan, found, out, stdout, signal);
    // A campaign of the other kind (a role campaign's session results) gives a file with a header
    // only: said, so that it does not pass for "this campaign has no results yet".
    if (campaign !== undefined && plan.campaign !== undefined && rows === 0) {
      const type = await source.campaignType(campaign);
      out.warn(noRowsWarning(plan.campaign, plan.table, type, (plan.since ?? plan.until) !== undefined));
    }
    return 0;
  } catch (err) {
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(plan.target);
    // Local storage failures exit 74 naming the user's own path, never the temporary file's.
    throw exportFailure(err, source, plan.target);
  }
}
