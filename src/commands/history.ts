import { mirrorOf } from '../app/factory.js';
import type { HistorySettings } from '../config/command-settings.js';
import { parseJson } from '../core/json.js';
import { UsageError } from '../errors.js';
import { showText } from '../ui/escape.js';
import { historyTable } from '../ui/history.js';
import { Output } from '../ui/output.js';

/**
 * `campaign-sync history --user <email or id> | --record <id>`: every version of the person's
 * results (or of one record) the mirror kept, oldest first: score, recommendation, when each was
 * seen and until when, deletions included. Nothing found is a usage error (exit 2): a typo must
 * not read as "no results".
 */
export async function history(settings: HistorySettings): Promise<number> {
  const out = new Output(settings);
  const user = settings.user?.trim();
  const record = settings.record?.trim();
  if ((user === undefined || user === '') && (record === undefined || record === '')) {
    throw new UsageError('history: give the candidate with --user <email or id>, or a result with --record <id>');
  }
  const query = { user: user === '' ? undefined : user, record: record === '' ? undefined : record };
  const reader = await mirrorOf(settings, (text) => out.warn(text)).versions();
  try {
    const versions = await reader.history(query);
    if (versions.length === 0) {
      const who = query.user !== undefined ? `the candidate "${showText(query.user)}"` : `the result "${showText(query.record ?? '')}"`;
      throw new UsageError(`history: no version of ${who} in the mirror (match: user id, or e-mail ignoring case, at the top of a record)`);
    }
    versions.sort((a, b) =>
      a.valid_from < b.valid_from ? -1 : a.valid_from > b.valid_from ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : a.version - b.version,
    );
    out.document({
      ...query,
      versions: versions.map((v) => ({
        record_id: v.id,
        kind: v.kind,
        campaign_id: v.campaign_id,
        report_type: v.report_type,
        version: v.version,
        deleted: v.deleted,
        score: v.score,
        recommendation: v.recommendation,
        valid_from: v.valid_from,
        valid_to: v.valid_to,
        request_id: v.request_id,
        user_id: v.user_id,
        user_email: v.user_email,
        record: v.raw === null ? null : parseJson(v.raw),
      })),
    });
    out.print(historyTable(versions, out.tableStyle));
    return 0;
  } finally {
    await reader.close();
  }
}
