/**
 * What `export --table` can stream, and how each table is filtered by campaign and by day.
 * Table and column names are fixed by PRODUCT.md §5.
 */
export const EXPORT_TABLES = {
  campaigns: { table: 'campaigns', campaignColumn: 'id', dateColumn: 'created_at' },
  'session-results': { table: 'session_results', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  'role-results': { table: 'role_results', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  'score-details': { table: 'score_details', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  // Eval results have no created_at: their day is the day they were evaluated.
  'eval-results': { table: 'eval_results', campaignColumn: 'campaign_id', dateColumn: 'evaluated_at' },
} as const;

export type ExportTable = keyof typeof EXPORT_TABLES;

/** Columns that hold JSON text: NDJSON export embeds them as JSON values. */
export const JSON_COLUMNS = new Set(['raw', 'feedback', 'additional_scores']);

export interface ExportFilter {
  campaign?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The SELECT for a table and filter; days compare on the date as written (its first 10 characters). */
export function exportQuery(name: ExportTable, filter: ExportFilter): { sql: string; params: string[] } {
  const spec = EXPORT_TABLES[name];
  const where: string[] = [];
  const params: string[] = [];
  if (filter.campaign !== undefined) {
    where.push(`${spec.campaignColumn} = ?`);
    params.push(filter.campaign);
  }
  if (filter.since !== undefined) {
    where.push(`substr(${spec.dateColumn}, 1, 10) >= ?`);
    params.push(filter.since);
  }
  if (filter.until !== undefined) {
    where.push(`substr(${spec.dateColumn}, 1, 10) <= ?`);
    params.push(filter.until);
  }
  // rowid order is insertion order: stable, and free (no sort, no temp B-tree, constant memory).
  const order = 'ORDER BY rowid';
  return { sql: `SELECT * FROM ${spec.table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ${order}`, params };
}
