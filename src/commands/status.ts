import { mirrorOf } from '../app/factory.js';
import type { StatusSettings } from '../config/command-settings.js';
import { ExitCode, exitCodeForHealth, UsageError } from '../errors.js';
import type { FleetStatus } from '../store/port.js';
import { assessHealth } from '../sync/health.js';
import { driftDocument, driftLines } from '../ui/drift.js';
import { showText } from '../ui/escape.js';
import { fleetDocument, fleetLines, stalledLine } from '../ui/fleet.js';
import { healthDocument, healthLines, nagiosReport, nagiosUnknown, relativeTime } from '../ui/health.js';
import { compareNames } from '../ui/order.js';
import { Output } from '../ui/output.js';
import { quarantineDocument, quarantineLines, statusTable } from '../ui/status.js';

async function checkMaxAge(given: string | undefined): Promise<number> {
  const { parseSettings, statusSchema } = await import('../config/schema.js');
  return parseSettings(statusSchema, { maxAge: given }).maxAge;
}

/**
 * `campaign-sync status`: one row per stream, plus campaigns skipped for their type. With --check,
 * the health rule of sync/health.ts instead: one line per unhealthy stream and exit 0, 4 or 5; with
 * --nagios too, a Nagios plugin's output and exit 0 to 3, whatever goes wrong.
 */
export async function status(settings: StatusSettings): Promise<number> {
  if (!settings.nagios) return show(settings, new Output(settings));
  // A plugin's output is its lines on stdout, whatever else was asked (refused below).
  const out = new Output({ ...settings, json: false });
  try {
    if (!settings.check) throw new UsageError('--nagios goes with --check');
    if (settings.json) throw new UsageError("--nagios prints a Nagios plugin's lines; it does not go with --json");
    return await show(settings, out);
  } catch (err) {
    // Nagios reads any other exit code, and a line on stderr, as a broken plugin: the reason goes
    // into the plugin's own UNKNOWN line.
    const report = nagiosUnknown(err instanceof Error ? err.message : String(err));
    out.outcome(report.lines.join('\n'));
    return report.code;
  }
}

/** The worker holding a stream's lease (host, pid, since it took the stream), or null. */
function leaseHolder(fleet: FleetStatus, stream: string) {
  const l = fleet.leases.find((x) => x.stream === stream);
  return l ? { host: l.host, pid: l.pid, since: l.since, stalled: l.stalled } : null;
}

async function show(settings: StatusSettings, out: Output): Promise<number> {
  if (settings.maxAge !== undefined && !settings.check) throw new UsageError('--max-age goes with --check');
  // The settings' schemas (zod) only for --check: plain `status` stays a light process.
  const maxAge = settings.check ? await checkMaxAge(settings.maxAge) : 0;
  // An empty --db file (touched, or a volume mounted before the first pull) has nothing to check: as
  // a mirror with no streams yet, CRITICAL (5). Plain `status` calls it a usage error, as `export` does.
  const mirror = await mirrorOf(settings, (text) => out.warn(text)).reader({ emptyHasNoStreams: settings.check === true });
  try {
    // Ages on the mirror's clock: the server's for a fleet, whose workers stamped their successes by it.
    const now = await mirror.now();
    const names = await mirror.campaignNames();
    const nameOf = (id: string) => names.get(id) ?? id;
    const rows = (await mirror.streams()).sort(
      (a, b) => compareNames(nameOf(a.campaign_id), nameOf(b.campaign_id)) || compareNames(a.stream, b.stream),
    );
    // A PostgreSQL mirror synced by a fleet: who syncs what, on the database's clock (none elsewhere).
    const fleet = await mirror.fleet();
    if (settings.check) {
      // A process syncing the mirror (the lock's holder, a fleet's worker): streams not synced yet are in their first sync.
      const health = assessHealth(rows, now, maxAge, await mirror.holder());
      const label = (r: (typeof rows)[number]) => `${nameOf(r.campaign_id)} (${r.endpoint}${r.report_type ? ` ${r.report_type}` : ''})`;
      if (settings.nagios) {
        const report = nagiosReport(health, rows, label, now);
        out.outcome(report.lines.join('\n'));
        return report.code;
      }
      // A stream whose lease holder stopped heartbeating, and that no worker took over, is not being synced.
      const stalled = fleet?.leases.filter((l) => l.stalled) ?? [];
      out.document({
        ...healthDocument(health, label, now),
        quarantined: quarantineDocument(rows),
        ...(fleet ? { stalled_leases: stalled.map((l) => ({ stream: l.stream, host: l.host, pid: l.pid, since: l.since })) } : {}),
      });
      // On stdout: what a cron wrapper or a monitor reads. --quiet keeps a failure's lines (the
      // reason is the point of the check) and silences only an OK.
      const lines = [
        ...(fleet ? stalled.map((l) => stalledLine(l, fleet)) : []),
        ...quarantineLines(rows, label),
        ...healthLines(health, label, now),
      ].join('\n');
      if (health.verdict === 'ok' && stalled.length === 0) out.print(lines);
      else out.outcome(lines);
      const code = exitCodeForHealth(health.verdict);
      return stalled.length > 0 && code === ExitCode.ok ? ExitCode.partial : code;
    }
    const skipped = await mirror.skipped();
    const holder = await mirror.holder();
    // Each change is reported once, by the first status that reads it.
    const drift = await mirror.takeDrift();
    if (drift.unmarked !== undefined)
      out.warn(`drift could not be marked reported (${showText(drift.unmarked)}): the next status reports it again`);
    out.document({
      sync_in_progress: holder ? { pid: holder.pid, host: holder.host, since: holder.since } : null,
      streams: rows.map((r) => ({
        stream: r.stream,
        campaign_id: r.campaign_id,
        campaign_name: names.get(r.campaign_id) ?? null,
        endpoint: r.endpoint,
        report_type: r.report_type,
        cursor: r.cursor === null ? null : r.cursor.toString(),
        records: Number(r.records),
        last_success_at: r.last_success_at,
        last_error: r.last_error,
        last_error_at: r.last_error_at,
        unlisted_since: r.unlisted_since,
        type_changed_to: r.type_changed_to,
        id_conflicts: r.id_conflicts,
        quarantined: r.quarantined ?? 0,
        // On a fleet's mirror: the worker syncing the stream now, or null.
        ...(fleet ? { worker: leaseHolder(fleet, r.stream) } : {}),
      })),
      skipped: skipped.map((s) => ({ id: s.id, name: s.name, type: s.type, reason: 'campaign type not supported' })),
      drift: driftDocument(drift.changes),
      ...(fleet ? { fleet: fleetDocument(fleet) } : {}),
    });
    // A note for people, on stderr: stdout is the table, which a pipe reads as TSV from its first line.
    if (holder)
      out.info(
        `sync in progress (pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}, since ${holder.since}, ${relativeTime(holder.since, now)})`,
      );
    if (rows.length === 0) out.print('No streams yet: run `campaign-sync pull`.');
    else out.print(statusTable(rows, nameOf, now, out.tableStyle));
    // Names, ids and types came from the service: escaped (renderTable escapes the table's cells).
    for (const s of skipped)
      out.print(`skipped: ${showText(`${s.name ?? s.id} (${s.id}): campaign type ${s.type ?? 'none'}`)} is not supported`);
    for (const line of driftLines(drift.changes)) out.print(line);
    if (fleet) for (const line of fleetLines(fleet)) out.print(line);
    return 0;
  } finally {
    await mirror.close();
  }
}
