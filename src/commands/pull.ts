import { SyncJob } from '../app/sync-job.js';
import type { PullSettings } from '../config/command-settings.js';
import { mergeEvents } from '../core/events.js';
import { ExitCode, exitCodeFor, exitCodeForPass, LockedError } from '../errors.js';
import { commandEvents } from '../ui/events.js';
import { retainedDocument, retainedLine } from '../ui/forget.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { failureLines, passDocument, passTable, placeDocument, placeLine } from '../ui/summary.js';

/** The metrics of `--metrics-file`, loaded only when asked for (prom-client costs a plain pull its start-up). */
async function metricsFor(settings: PullSettings) {
  if (settings.metricsFile === undefined) return undefined;
  const { MetricsFile } = await import('../app/metrics-file.js');
  return new MetricsFile(settings.metricsFile, settings.metricsFileMode);
}

/**
 * A campaign this database synced that the service's list no longer holds (its key lost access, or
 * the campaign was removed) is never synced again: said once per pull, by name, so that a stream
 * that stops moving is not taken for a sync problem. `status` shows it too.
 */
async function warnUnlisted(session: SyncJob, out: Output): Promise<void> {
  const gone = new Map<string, string>();
  const rows = await session.store.streams();
  for (const row of rows) if (row.unlisted_since) gone.set(row.campaign_id, row.unlisted_since);
  // A campaign whose type changed is read through its new type's stream; the old one is retired.
  const retired = rows.filter((r) => r.type_changed_to);
  if (gone.size === 0 && retired.length === 0) return;
  const names = await session.store.campaignNames();
  for (const [id, since] of gone) {
    out.warn(
      `campaign ${names.get(id) ?? id} (${id}) is no longer listed by the service (last listed ${since}): its records and checkpoints are kept; it is not synced and \`status --check\` leaves it out`,
    );
  }
  for (const r of retired) {
    out.warn(
      `campaign ${names.get(r.campaign_id) ?? r.campaign_id} (${r.campaign_id}) is of type ${r.type_changed_to} now: its stream ${r.stream} is retired, its records kept; \`status --check\` leaves it out, \`reconcile --prune\` removes its records, \`reset --campaign\` the stream`,
    );
  }
}

/**
 * `campaign-sync pull`: one pass, a summary, and the exit code of docs/exit-codes.md. With --if-idle, a
 * lock held by another live campaign-sync (the database's lock file, the NDJSON folder's) is exit 0
 * and silence, as `flock -n` gives cron: a tick during a long backfill mails nobody; on PostgreSQL a
 * stream another worker holds is left to it (sync/pass.ts skipBusy). Only that lock: another
 * program's SQLite lock (busy) is still 75.
 */
export async function pull(settings: PullSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  try {
    return await pullOnce(settings, signal, out);
  } catch (err) {
    if (!(settings.ifIdle && err instanceof LockedError)) throw err;
    // Silent: asked for by --verbose (the request log) or --json (a script reads a document).
    out.trace(`--if-idle: ${err.message}`);
    out.document({ ran: false, reason: err.message, exit_code: ExitCode.ok });
    return ExitCode.ok;
  }
}

async function pullOnce(settings: PullSettings, signal: AbortSignal, out: Output): Promise<number> {
  const file = await metricsFor(settings);
  const progress = await startProgress(out, 'listing campaigns');
  let session: SyncJob;
  try {
    session = await SyncJob.open(settings, signal, {
      events: mergeEvents(commandEvents(out, progress), file?.metrics.events()),
      alertFailure: (text) => out.error(text),
    });
    await file?.open(session.store.counters);
  } catch (err) {
    progress.stop();
    throw err;
  }
  for (const w of session.warnings) out.warn(w);
  const startedAt = Date.now();
  // Unset when the pull throws: a failed pull that committed nothing leaves no file it made (SyncJob.close).
  let code: number | undefined;
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
        // Counters that cannot be kept then share the pass's cause: its error is the one reported.
        await file.write().catch((e: Error) => out.error(e.message));
      }
      throw err;
    }
    progress.stop();
    const retained = session.store.retained;
    out.document({
      ...passDocument(result),
      written_to: placeDocument(session.store.place),
      ...(retained === undefined ? {} : { retention: retainedDocument(retained) }),
    });
    if (retained !== undefined) out.info(retainedLine(retained, session.store.place));
    // Built only when printed: a cron pull is --quiet, and the table costs more than a no-op pass.
    if (!out.quiet && !out.json) out.print(`${passTable(result, out.tableStyle)}\n${placeLine(session.store.place)}`);
    // The table lists failures; without it (--quiet, --json) each failed stream still gets one line.
    if (out.quiet || out.json) for (const line of failureLines(result)) out.error(line);
    if (!out.quiet) await warnUnlisted(session, out);
    if (file !== undefined) {
      file.metrics.pass(result, await session.store.streams());
      // After the summary: a metrics file that cannot be written, or counters that cannot be kept, is
      // exit 74 (monitoring would go stale, or count wrong, unseen).
      const unkept = await file.write();
      if (unkept !== undefined) throw unkept;
    }
    code = exitCodeForPass(result);
    return code;
  } finally {
    progress.stop();
    await session.close(code !== ExitCode.ok);
  }
}
