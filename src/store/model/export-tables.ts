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

/** The results tables, whose rows carry change numbers and whose deletions leave tombstones. */
export const RESULT_TABLES = ['session_results', 'role_results'] as const;

/** A results table by its SQL name. */
export type ResultTable = (typeof RESULT_TABLES)[number];

/** Which results table a result of a kind lives in (the views' `kind`). */
export const RESULT_TABLE_OF = { session: 'session_results', role: 'role_results' } as const;

/** A result's kind, as the views name it. */
export type ResultKind = keyof typeof RESULT_TABLE_OF;

/**
 * How a table's or view's `export --since-last` feed is made and applied (docs/commands.md):
 * - `rows`: the rows themselves carry change numbers (the results tables) or are few enough to be given
 *   whole every time (campaigns, which are never deleted); a row replaces the one of its `key`, a
 *   deletion row removes it.
 * - `results`: every row belongs to one result (`key` names it); when a result changes, the feed gives
 *   a deletion row of reason `replaced` for it, then every row it has now, so a loader deletes the rows
 *   of the result the deletion row names, then inserts the rows given. A result deleted gives a deletion
 *   row of its reason and no rows. `latest_results` gives every result of a candidate's campaign again
 *   when one of them changed or went, since which of them is the latest may change with it.
 * `reads`: the results tables whose tombstones the feed gives (each is kept until every reader read it).
 */
export const FEEDS = {
  campaigns: { kind: 'rows', key: ['id'], reads: [] },
  'session-results': { kind: 'rows', key: ['id'], reads: ['session_results'] },
  'role-results': { kind: 'rows', key: ['id'], reads: ['role_results'] },
  'score-details': { kind: 'results', key: ['role_result_id'], reads: ['role_results'] },
  // Eval results name their score detail, not its role result: the feed adds the result's id, RESULT_ID_COLUMN.
  'eval-results': { kind: 'results', key: ['parent_type', '_result_id'], reads: RESULT_TABLES },
  results: { kind: 'results', key: ['kind', 'result_id'], reads: RESULT_TABLES },
  latest_results: { kind: 'results', key: ['kind', 'result_id'], reads: RESULT_TABLES },
  skill_scores: { kind: 'results', key: ['kind', 'result_id'], reads: RESULT_TABLES },
} as const satisfies Record<ExportTable, { kind: 'rows' | 'results'; key: readonly string[]; reads: readonly ResultTable[] }>;

/** The column every eval-results feed row ends its data with: the id of the result the row belongs to. */
export const RESULT_ID_COLUMN = '_result_id';

/** The columns a `--columns` list of a feed must hold: its key, but for the one every row of it gets anyway. */
export function feedKeyColumns(name: ExportTable): string[] {
  return FEEDS[name].key.filter((c) => c !== RESULT_ID_COLUMN);
}

/**
 * The cells of a deletion row of a `results` feed: its key, for the result of `kind` and `id`. Only
 * ids and kinds: a deletion row names nobody.
 */
export function deletionKey(name: ExportTable, kind: ResultKind, id: string): Record<string, string> {
  switch (name) {
    case 'score-details':
      return { role_result_id: id };
    case 'eval-results':
      return { parent_type: kind === 'session' ? 'session_result' : 'score_detail', [RESULT_ID_COLUMN]: id };
    default:
      return { kind, result_id: id };
  }
}

/** The feeds whose consumers read the tombstones of `table`, by their SQL names (export_consumers.table_name). */
export function readersOf(table: ResultTable): string[] {
  return (Object.keys(FEEDS) as ExportTable[])
    .filter((name) => (FEEDS[name].reads as readonly string[]).includes(table))
    .map((name) => EXPORT_TABLES[name].table);
}

/** The results tables whose tombstones some consumer reads, given the tables consumers are registered for. */
export function tombstonesRead(consumed: Iterable<string>): Set<ResultTable> {
  const tables = new Set(consumed);
  return new Set(RESULT_TABLES.filter((t) => readersOf(t).some((r) => tables.has(r))));
}

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
