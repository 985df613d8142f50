import { openMirrorReader } from '../app/mirror-reader.js';
import { exitCodeForHealth, UsageError } from '../errors.js';
import { assessHealth } from '../sync/health.js';
import { showText } from '../ui/escape.js';
import { healthDocument, healthLines, relativeTime, retiredAs, unlistedSince } from '../ui/health.js';
import { compareNames } from '../ui/order.js';
import { Output, type OutputFlags } from '../ui/output.js';
import { formatCount, renderTable } from '../ui/table.js';

export interface StatusFlags extends OutputFlags {
  db?: string;
  pgSchema?: string;
  check?: boolean;
  maxAge?: string;
}

async function checkMaxAge(given: string | undefined): Promise<number> {
  const { parseSettings, statusSchema } = await import('../config/schema.js');
  return parseSettings(statusSchema, { maxAge: given }).maxAge;
}

/**
 * `campaign-sync status`: one row per stream, plus campaigns skipped for their type. With --check,
 * the health rule of sync/health.ts instead: one line per unhealthy stream and exit 0, 4 or 5.
 */
export async function status(flags: StatusFlags): Promise<number> {
  const out = new Output(flags);
  if (flags.maxAge !== undefined && !flags.check) throw new UsageError('--max-age goes with --check');
  // The settings' schemas (zod) only for --check: plain `status` stays a light process (issue 15).
  const maxAge = flags.check ? await checkMaxAge(flags.maxAge) : 0;
  // An empty --db file (touched, or a volume mounted before the first pull) has nothing to check: as
  // a mirror with no streams yet, CRITICAL (5). Plain `status` calls it a usage error, as `export` does.
  const mirror = await openMirrorReader(flags, { emptyHasNoStreams: flags.check === true, warn: (text) => out.warn(text) });
  const now = Date.now();
  try {
    const names = await mirror.campaignNames();
    const nameOf = (id: string) => names.get(id) ?? id;
    const rows = (await mirror.streams()).sort(
      (a, b) => compareNames(nameOf(a.campaign_id), nameOf(b.campaign_id)) || compareNames(a.stream, b.stream),
    );
    if (flags.check) {
      const health = assessHealth(rows, now, maxAge);
      const label = (r: (typeof rows)[number]) => `${nameOf(r.campaign_id)} (${r.endpoint}${r.report_type ? ` ${r.report_type}` : ''})`;
      out.document(healthDocument(health, label, now));
      // On stdout: what Nagios and a cron wrapper read; --quiet keeps only the exit code.
      for (const line of healthLines(health, label, now)) out.print(line);
      return exitCodeForHealth(health.verdict);
    }
    const skipped = await mirror.skipped();
    const holder = await mirror.holder();
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
      })),
      skipped: skipped.map((s) => ({ id: s.id, name: s.name, type: s.type, reason: 'campaign type not supported' })),
    });
    if (holder)
      out.print(
        showText(
          `sync in progress (pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}, since ${holder.since}, ${relativeTime(holder.since, now)})`,
        ),
      );
    if (rows.length === 0) out.print('No streams yet: run `campaign-sync pull`.');
    else {
      out.print(
        renderTable(
          ['campaign', 'endpoint', 'report', 'cursor', 'records', 'id conflicts', 'last success', 'last error'],
          rows.map((r) => [
            names.get(r.campaign_id) ?? r.campaign_id,
            r.endpoint,
            r.report_type ?? '',
            r.cursor === null ? '' : r.cursor.toString(),
            formatCount(r.records),
            formatCount(r.id_conflicts),
            relativeTime(r.last_success_at, now),
            r.last_error
              ? `${relativeTime(r.last_error_at, now)}: ${r.last_error}`
              : r.unlisted_since
                ? unlistedSince(r, now)
                : r.type_changed_to
                  ? retiredAs(r)
                  : '',
          ]),
          [],
          // An error is cut later than a name: its end (status, message, request id) is what helps.
          [undefined, undefined, undefined, undefined, undefined, undefined, undefined, 160],
          out.tableStyle,
        ),
      );
    }
    // Names, ids and types came from the service: escaped (renderTable escapes the table's cells).
    for (const s of skipped)
      out.print(`skipped: ${showText(`${s.name ?? s.id} (${s.id}): campaign type ${s.type ?? 'none'}`)} is not supported`);
    return 0;
  } finally {
    await mirror.close();
  }
}
