import { type SyncFlags, SyncJob } from '../app/sync-job.js';
import { mergeEvents } from '../core/events.js';
import { exitCodeFor, exitCodeForPass } from '../errors.js';
import { commandEvents } from '../ui/events.js';
import { Output, type OutputFlags } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { failureLines, passDocument, passTable } from '../ui/summary.js';

/** What `pull` takes: the sync settings and the output options. */
export type PullFlags = SyncFlags &
  OutputFlags & {
    /** `--metrics-file <path>`: the Prometheus text of the pass, for node_exporter's textfile collector. */
    metricsFile?: string;
  };

/** The metrics of `--metrics-file`, loaded only when asked for (prom-client costs a plain pull its start-up). */
async function metricsFor(path: string | undefined) {
  if (path === undefined) return undefined;
  const [{ SyncMetrics }, file] = await Promise.all([import('../app/metrics.js'), import('../app/metrics-file.js')]);
  file.checkMetricsFile(path);
  const metrics = new SyncMetrics();
  return { events: metrics.events(), metrics, write: () => file.writeMetricsFile(path, metrics) };
}

/**
 * A campaign this database synced that the service's list no longer holds (its key lost access, or
 * the campaign was removed) is never synced again: said once per pull, by name, so that a stream
 * that stops moving is not taken for a sync problem. `status` shows it too.
 */
async function warnUnlisted(session: SyncJob, out: Output): Promise<void> {
  const gone = new Map<string, string>();
  for (const row of await session.store.streams()) if (row.unlisted_since) gone.set(row.campaign_id, row.unlisted_since);
  if (gone.size === 0) return;
  const names = await session.store.campaignNames();
  for (const [id, since] of gone) {
    out.warn(
      `campaign ${names.get(id) ?? id} (${id}) is no longer listed by the service (last listed ${since}): its records and checkpoints are kept; it is not synced and \`status --check\` leaves it out`,
    );
  }
}

/** `campaign-sync pull`: one pass, a summary, and the exit code of PRODUCT.md §3. */
export async function pull(flags: PullFlags, signal: AbortSignal): Promise<number> {
  const out = new Output(flags);
  const file = await metricsFor(flags.metricsFile);
  const progress = await startProgress(out, 'listing campaigns');
  const session = await SyncJob.open(flags, signal, {
    events: mergeEvents(commandEvents(out, progress), file?.events),
    alertFailure: (text) => out.error(text),
  });
  for (const w of session.warnings) out.warn(w);
  const startedAt = Date.now();
  try {
    let result: Awaited<ReturnType<SyncJob['pass']>>;
    try {
      result = await session.pass();
    } catch (err) {
      // A pass that synced nothing (the service down, a 401) is what monitoring most needs to see;
      // the pass's own error stays the one reported.
      if (file !== undefined) {
        file.metrics.failedPass(Date.now() - startedAt, exitCodeFor(err));
        file.metrics.streams(await session.store.streams().catch(() => []));
        await file.write().catch((e: Error) => out.error(e.message));
      }
      throw err;
    }
    progress.stop();
    out.document(passDocument(result));
    // Built only when printed: a cron pull is --quiet, and the table costs more than a no-op pass (issue 15).
    if (!out.quiet && !out.json) out.print(passTable(result, out.tableStyle));
    // The table lists failures; without it (--quiet, --json) each failed stream still gets one line.
    if (out.quiet || out.json) for (const line of failureLines(result)) out.error(line);
    if (!out.quiet) await warnUnlisted(session, out);
    if (file !== undefined) {
      file.metrics.pass(result, await session.store.streams());
      // After the summary: a metrics file that cannot be written is exit 74 (monitoring would go stale unseen).
      await file.write();
    }
    return exitCodeForPass(result);
  } finally {
    progress.stop();
    await session.close();
  }
}
