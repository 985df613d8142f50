/**
 * What every store shares about versions of results (store/sqlite/versions.ts, store/pg/versions.ts):
 * who a version names, and a version as the row its table held (`export --as-of`), as pure data.
 */
import { emailKey } from '../../core/email.js';
import { parseJson } from '../../core/json.js';
import type { CheckedRecord } from '../../core/types.js';
import { TIME_COLUMNS } from './export-tables.js';
import { COLUMNS, roleRow, sessionRow, type Values } from './rows.js';
import { normalTime } from './times.js';

/** Whether a row's person columns name `user` (an id as given, or an e-mail compared by emailKey). */
export function namesUser(user: string, id: string | null, email: string | null): boolean {
  return id === user || (email !== null && user.includes('@') && emailKey(email) === emailKey(user));
}

/** The fields of a version a table row is made from (store/port.ts ResultVersion). */
export interface VersionFields {
  kind: 'session' | 'role';
  id: string;
  campaign_id: string | null;
  report_type: string | null;
  order_index: bigint | null;
  raw: string | null;
}

/** The columns of a version's row: the table's own (id first), then which version it is and since when. */
export function versionColumns(kind: 'session' | 'role'): string[] {
  return ['id', ...COLUMNS[kind === 'session' ? 'session_results' : 'role_results'], 'version', 'valid_from'];
}

/** A version (not a deletion) as the row its table held then, in versionColumns' order, without the last two. */
export function versionValues(v: VersionFields): Values {
  const record = parseJson(v.raw ?? 'null') as Record<string, unknown>;
  const r: CheckedRecord = { record: record ?? {}, id: v.id, orderIndex: v.order_index ?? 0n, raw: v.raw ?? 'null' };
  const campaign = v.campaign_id ?? '';
  const values = v.kind === 'session' ? sessionRow(r, campaign) : roleRow(r, campaign, v.report_type ?? '');
  // rows.ts puts the key last.
  return [values[values.length - 1], ...values.slice(0, -1)];
}

/** What a version says of the candidate, for `history`: its score and (role results) recommendation. */
export function versionSummary(v: VersionFields): { score: number | null; recommendation: string | null } {
  if (v.raw === null) return { score: null, recommendation: null };
  const values = versionValues(v);
  const columns = versionColumns(v.kind);
  const at = (name: string) => values[columns.indexOf(name)];
  const score = v.kind === 'session' ? at('score') : at('overall_score');
  const recommendation = v.kind === 'role' ? at('recommendation_status') : null;
  return { score: typeof score === 'number' ? score : null, recommendation: typeof recommendation === 'string' ? recommendation : null };
}

/** Versions as the rows `export --as-of` writes (versionColumns' order), times in their normal form (times.ts). */
export async function* versionRows(
  versions: AsyncIterable<VersionFields & { version: number; valid_from: string }>,
): AsyncGenerator<unknown[]> {
  let times: number[] | undefined;
  for await (const v of versions) {
    const row = [...versionValues(v), v.version, v.valid_from];
    times ??= versionColumns(v.kind).flatMap((c, i) => (TIME_COLUMNS.has(c) ? [i] : []));
    for (const i of times) row[i] = normalTime(row[i]);
    yield row;
  }
}

/** A version with what it says of the candidate. */
export function withSummary<V extends VersionFields>(v: V): V & { score: number | null; recommendation: string | null } {
  return { ...v, ...versionSummary(v) };
}
