/**
 * `export --campaign`, whichever mirror holds it (commands/export.ts): the one
 * campaign a selector names, and why a table held no rows of it. Both mirrors print these same words;
 * each looks up the ids and the campaign's type in its own database.
 */
import { UsageError } from '../errors.js';
import { endpointFor } from '../spec/paths.js';
import type { ExportTable } from './tables.js';

/** The campaign `selector` (an id, a name or a unique id prefix, as `pull` and `reset` take it) names; none or several is exit 2. */
export function selectedCampaign(selector: string, ids: readonly string[]): string {
  if (ids.length === 1) return ids[0] as string;
  if (ids.length > 1) throw new UsageError(`--campaign: "${selector}" names ${ids.length} campaigns; use the id`);
  throw new UsageError(
    `--campaign: no campaign with the id, name or id prefix "${selector}" in this database (see \`campaign-sync status\`)`,
  );
}

/**
 * Why a --campaign export wrote no rows, as far as the database can tell from the campaign's type
 * (`type`, as stored): a campaign of the other kind (a role campaign's session results) gives a file
 * with a header only, which must not pass for "this campaign has no results yet".
 */
export function noRowsWarning(selector: string, table: ExportTable, type: string | null | undefined, dated: boolean): string {
  const endpoint = endpointFor(type);
  const holds = table === 'session-results' ? 'session' : table === 'role-results' || table === 'score-details' ? 'role' : undefined;
  const other = endpoint === 'session' ? 'session-results' : 'role-results';
  const why =
    endpoint !== undefined && holds !== undefined && endpoint !== holds
      ? `: it is a ${endpoint} campaign, whose results are in --table ${other}`
      : dated
        ? ' in the dates given'
        : ' (none stored yet)';
  return `--campaign "${selector}": no rows in --table ${table}${why}`;
}

/**
 * Why an export cannot answer from this database: it keeps the state of an NDJSON pull, and its
 * records are the files in `folder`. Exit 2 rather than an empty file that passes for "no results".
 */
export function recordsElsewhereError(db: string, what: string, folder: string): UsageError {
  return new UsageError(
    `${db} holds no ${what}: it keeps the state of an NDJSON pull, whose records are the files in ${folder} (read them there, or pull into a database without --format ndjson)`,
  );
}
