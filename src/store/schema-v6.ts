/**
 * Version 6 of the schema: DETAILED records stored once (store/compact.ts). Score details and eval
 * results gain their `position` in the record, two views give the full rows back, and every DETAILED
 * record already stored is rewritten into the new shape from its own `raw` (the source of truth: the
 * rows it derives are written again by the same code as a pull's), in the migration's transaction.
 */
import { parseJson, toJson } from '../core/json.js';
import type { Db } from './db.js';
import { Mirror } from './mirror.js';
import { detailRawSql, roleRawSql } from './reassemble.js';
import { COLUMNS } from './rows.js';

const full = (table: 'role_results' | 'score_details', alias: string, raw: string) =>
  `CREATE VIEW ${table}_full AS SELECT ${alias}.id, ${COLUMNS[table]
    .map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`))
    .join(', ')} FROM ${table} ${alias};`;

export const V6_SQL = `
ALTER TABLE score_details ADD COLUMN position INTEGER;
ALTER TABLE eval_results ADD COLUMN position INTEGER;
${full('role_results', 'r', roleRawSql('r'))}
${full('score_details', 'd', detailRawSql('d'))}
`;

/** Rewrites every stored DETAILED record; returns how many were rewritten. */
export function compactStored(db: Db): number {
  // Version 6 has no change numbers yet (store/changes.ts, version 8).
  const mirror = new Mirror(db, false);
  const next = db.prepare("SELECT id, campaign_id, raw FROM role_results WHERE report_type = 'DETAILED' AND id > ? ORDER BY id LIMIT 500");
  let after = '';
  let n = 0;
  for (;;) {
    const rows = next.all(after) as Array<{ id: string; campaign_id: string; raw: string }>;
    if (rows.length === 0) return n;
    for (const row of rows) {
      after = row.id;
      let record: unknown;
      try {
        record = parseJson(row.raw);
      } catch {
        continue;
      }
      if (record === null || typeof record !== 'object' || !Array.isArray((record as { score_details?: unknown }).score_details)) continue;
      // A text this release would not write the same way stays whole (its rows are left as they are).
      if (toJson(record) !== row.raw) continue;
      // orderIndex is not read by restore().
      mirror.restore({ record: record as Record<string, unknown>, id: row.id, orderIndex: 0n, raw: row.raw }, row.campaign_id);
      n++;
    }
  }
}
