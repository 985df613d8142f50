import { mirrorOf } from '../app/factory.js';
import { SyncJob } from '../app/sync-job.js';
import type { MirrorSettings, ReconcileSettings } from '../config/command-settings.js';
import { UsageError } from '../errors.js';
import type { QuarantineSelection } from '../store/port.js';
import { retryQuarantined } from '../sync/quarantine-retry.js';
import { commandEvents } from '../ui/events.js';
import { Output, type OutputFlags } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { keptLines, quarantineEntry, quarantineTable } from '../ui/quarantine.js';

export const QUARANTINE_ACTIONS = ['list', 'retry', 'drop'] as const;

export interface QuarantineFlags extends OutputFlags {
  all?: boolean;
}

/** The ids given to `drop` or `retry` (all when none for retry), checked. */
function selection(action: string, ids: readonly string[], all: boolean): QuarantineSelection {
  if (action === 'list' && (ids.length > 0 || all)) throw new UsageError('quarantine list takes no ids and no --all');
  if (all && ids.length > 0) throw new UsageError(`quarantine ${action}: give ids or --all, not both`);
  if (action === 'drop' && !all && ids.length === 0)
    throw new UsageError('quarantine drop: give the ids to drop (see `quarantine list`), or --all');
  if (all || ids.length === 0) return 'all';
  return ids.map((text) => {
    if (!/^\d{1,15}$/.test(text)) throw new UsageError(`quarantine ${action}: "${text}" is not an id of \`quarantine list\``);
    return Number(text);
  });
}

/**
 * `campaign-sync quarantine list|retry|drop`: the records that failed the record rules and were kept
 * apart while their streams went on (store/sqlite/quarantine.ts). `list` shows them; `retry [ids]` reads
 * their pages again and stores those that now pass; `drop <ids>|--all` deletes them, asking nothing.
 * `settings`: the mirror's for list and drop, a job's (the API too) for retry.
 */
export async function quarantine(
  action: string,
  ids: readonly string[],
  flags: QuarantineFlags,
  settings: MirrorSettings | ReconcileSettings,
  signal: AbortSignal,
): Promise<number> {
  if (!(QUARANTINE_ACTIONS as readonly string[]).includes(action))
    throw new UsageError(`quarantine: "${action}" is not an action (list, retry or drop)`);
  const which = selection(action, ids, flags.all === true);
  const out = new Output(flags);
  const admin = await mirrorOf(settings, (text) => out.warn(text)).quarantine();
  try {
    if (action === 'list') {
      const rows = await admin.list();
      out.document({ quarantined: rows.map(quarantineEntry) });
      out.print(
        rows.length === 0
          ? `Nothing is quarantined in ${admin.name}.`
          : quarantineTable(rows, await admin.campaignNames(), Date.now(), out.tableStyle),
      );
      return 0;
    }
    if (action === 'drop') {
      const dropped = await admin.drop(which);
      out.document({ dropped: dropped.map((r) => r.id) });
      out.print(
        `Dropped ${dropped.length} quarantined ${dropped.length === 1 ? 'record' : 'records'}${dropped.length > 0 ? ` (${dropped.map((r) => r.id).join(', ')})` : ''}.`,
      );
      if (which !== 'all') {
        const missing = which.filter((n) => !dropped.some((r) => r.id === n));
        if (missing.length > 0)
          out.warn(`no quarantined record ${missing.join(', ')}: nothing dropped for ${missing.length === 1 ? 'it' : 'them'}`);
      }
      return 0;
    }
    const rows = (await admin.list()).filter((r) => which === 'all' || which.includes(r.id));
    if (which !== 'all') {
      const missing = which.filter((n) => !rows.some((r) => r.id === n));
      if (missing.length > 0)
        out.warn(`no quarantined record ${missing.join(', ')}: nothing to retry for ${missing.length === 1 ? 'it' : 'them'}`);
    }
    if (rows.length === 0) {
      // Nothing to read again: no request, no lock.
      out.document({ stored: [], kept: [], requests: 0 });
      out.print(`Nothing to retry in ${admin.name}.`);
      return 0;
    }
    const progress = await startProgress(out, 'reading quarantined records again');
    const job = await SyncJob.open(settings as ReconcileSettings, signal, { events: commandEvents(out, progress) });
    try {
      for (const w of job.warnings) out.warn(w);
      const result = await retryQuarantined(rows, { client: job.client, sink: job.store.sink, signal });
      progress.stop();
      out.document({
        stored: result.stored.map((r) => r.id),
        kept: result.kept.map((k) => ({ id: k.row.id, why: k.why })),
        requests: result.requests,
      });
      out.print(
        `Stored ${result.stored.length} of ${rows.length} quarantined ${rows.length === 1 ? 'record' : 'records'} (${result.requests} ${result.requests === 1 ? 'request' : 'requests'}).`,
      );
      for (const line of keptLines(result.kept)) out.warn(line);
      return 0;
    } finally {
      progress.stop();
      await job.close();
    }
  } finally {
    await admin.close();
  }
}
