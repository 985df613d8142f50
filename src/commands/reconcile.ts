import { SyncJob } from '../app/sync-job.js';
import type { ReconcileSettings } from '../config/command-settings.js';
import { exitCodeForReconcile, isAbort } from '../errors.js';
import type { ReconcileResult } from '../sync/reconcile.js';
import { commandEvents } from '../ui/events.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { reconcileDocument, reconcileFailures, reconcileInterrupted, reconcileTable } from '../ui/reconcile.js';

/**
 * `campaign-sync reconcile`: re-walk every stream from the start, upsert, and report what is served,
 * stored, added, changed and gone; `--prune` removes (or tombstones) what is gone. Exit 4 when a
 * stream fails (nothing of it is pruned), as a pull's; 130 when a signal stopped it before every
 * stream was read (the report is partial), as an export's.
 */
export async function reconcileStreams(settings: ReconcileSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const prune = settings.prune;
  const started = Date.now();
  const progress = await startProgress(out, 'listing campaigns');
  const job = await SyncJob.open(settings, signal, { events: commandEvents(out, progress) });
  for (const w of job.warnings) out.warn(w);
  // Unset when it throws: a failed run leaves no mirror it created and committed nothing to (SyncJob.close).
  let code: number | undefined;
  try {
    let result: ReconcileResult;
    try {
      result = await job.reconcile(prune);
    } catch (err) {
      // Stopped while listing the campaigns: no stream was read, and the report is empty, not whole.
      if (!(isAbort(err) && signal.aborted)) throw err;
      result = { streams: [], planned: 0, requests: job.client.requests, durationMs: Date.now() - started, interrupted: true };
    }
    progress.stop();
    out.document(reconcileDocument(result, prune));
    out.print(reconcileTable(result, prune, out.tableStyle));
    if (out.quiet || out.json) for (const line of reconcileFailures(result)) out.error(line);
    if (result.interrupted) out.fatal(reconcileInterrupted(result));
    code = exitCodeForReconcile(result);
    return code;
  } finally {
    progress.stop();
    await job.close(code !== 0);
  }
}
