/**
 * What every backend's export reads, by `--table` name: the table or view, and the columns a
 * campaign and a day are filtered on; the results tables `--since-last` reads; and the columns of
 * the mirror's own bookkeeping that no export gives. Names are fixed by the documented mirror.
 */

export const EXPORT_TABLES = {
  campaigns: { table: 'campaigns', campaignColumn: 'id', dateColumn: 'created_at' },
  'session-results': { table: 'session_results', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  'role-results': { table: 'role_results', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  'score-details': { table: 'score_details', campaignColumn: 'campaign_id', dateColumn: 'created_at' },
  // Eval results have no created_at: their day is the day they were evaluated.
  'eval-results': { table: 'eval_results', campaignColumn: 'campaign_id', dateColumn: 'evaluated_at' },
  // The analysts' views (store/sqlite/migrations/v5.ts), by their SQL names: no row id, so read row by row in the view's order.
  results: { table: 'results', campaignColumn: 'campaign_id', dateColumn: 'created_at', view: true },
  latest_results: { table: 'latest_results', campaignColumn: 'campaign_id', dateColumn: 'created_at', view: true },
  skill_scores: { table: 'skill_scores', campaignColumn: 'campaign_id', dateColumn: 'evaluated_at', view: true },
} as const satisfies Record<string, { table: string; campaignColumn: string; dateColumn: string; view?: true }>;

export type ExportTable = keyof typeof EXPORT_TABLES;

/** Whether `--table` names one of the analysts' views, which has no row id to read by. */
export function isView(name: ExportTable): boolean {
  return 'view' in EXPORT_TABLES[name];
}

/** The result tables --since-last reads, by `--table` name. */
export const CHANGE_TABLES = { 'session-results': 'session_results', 'role-results': 'role_results' } as const;

/** A `--table` name --since-last reads. */
export type ChangeTableName = keyof typeof CHANGE_TABLES;

/** The results tables --since-last reads, by their SQL names. */
export type ChangeTable = (typeof CHANGE_TABLES)[ChangeTableName];

/** Columns of ours that exports leave out (they are the mirror's bookkeeping, not the service's data). */
export const INTERNAL_COLUMNS = new Set(['change_seq']);

/**
 * Declared types of the views' computed columns, which SQLite leaves undeclared: what PostgreSQL's
 * views give them, so that a typed format (Parquet) types them alike on every backend.
 */
export const COMPUTED_TYPES: Readonly<Record<string, string>> = { rank_in_campaign: 'INTEGER' };

/**
 * The mirror's time columns: every export gives them in the one normal form of store/model/times.ts
 * (UTC, `Z`, milliseconds or microseconds), whatever the backend keeps, and a value that is not a
 * time as NULL. A column of an analyst's own is a time when its declared type is one.
 */
export const TIME_COLUMNS: ReadonlySet<string> = new Set([
  'created_at',
  'updated_at',
  'evaluated_at',
  'seen_at',
  'valid_from',
  'valid_to',
  'deleted_at',
  '_deleted_at',
]);

/** Whether an exported column holds times: one of TIME_COLUMNS, or declared a timestamp (PostgreSQL's timestamptz). */
export function isTimeColumn(name: string, declared: string | null | undefined): boolean {
  return TIME_COLUMNS.has(name) || (declared ?? '').toUpperCase().startsWith('TIMESTAMP');
}
