/**
 * The SQL of a table's `export --since-last` feed (FEEDS of ./export-tables.ts), one text for both
 * backends: which rows of the table or view are in a window of change numbers, and its deletion rows.
 * Both backends name the window's ends as the dialect says (SQLite `@from`, PostgreSQL `$1`) and
 * read the text in the snapshot they read the rows in.
 *
 * A row that belongs to a result is in the window when its result's change number is: a result's
 * rows are written, rewritten and deleted with it, so its number moves whenever they change.
 * `latest_results` takes every result of a candidate's campaign one of whose results changed, and
 * every result of a campaign reconcile --prune deleted one from (a pruned result's tombstone names its
 * campaign): which result is the latest may change with either. An erasure or a retention takes
 * every earlier result of the candidate with the one it deletes (a candidate's, or all before a
 * time), so no result left behind becomes the latest. The views give each result's campaign name, so
 * a campaign new or renamed (it has a change number of its own) gives all its results again.
 */
import { type ExportTable, RESULT_ID_COLUMN, RESULT_TABLE_OF, type ResultKind } from './export-tables.js';

/** How a backend writes the window's ends and the time a deletion row of a result that changed is dated with when its change has none. */
export interface FeedDialect {
  from: string;
  to: string;
  now: string;
}

/** The SQL a feed reads: a condition on its rows (alias `t`), columns it adds, and its deletion rows. */
export interface FeedSql {
  /** Undefined: every row (campaigns, given whole every time). */
  rows?: string | undefined;
  /** `expression AS name` added after the chosen columns. */
  extra?: string | undefined;
  /**
   * Undefined for a feed of rows (its tombstones are the table's own). Otherwise `kind, id,
   * campaign_id` (null), `deleted_at, reason` of each deletion row, read only by a consumer that had an earlier export.
   */
  deletions?: string | undefined;
}

const KINDS = Object.keys(RESULT_TABLE_OF) as ResultKind[];

/** A results table's rows (alias `x`) numbered within the window. */
const numbered = (d: FeedDialect, x: string) => `coalesce(${x}.change_seq, 0) > ${d.from} AND coalesce(${x}.change_seq, 0) <= ${d.to}`;

/** The ids of the results of `kind` that changed within the window. */
const changed = (d: FeedDialect, kind: ResultKind) => `SELECT x.id FROM ${RESULT_TABLE_OF[kind]} x WHERE ${numbered(d, 'x')}`;

/** The campaigns new or renamed within the window: the views give their names. */
const renamed = (d: FeedDialect) => `SELECT cc.id FROM campaigns cc WHERE ${numbered(d, 'cc')}`;

/** Rows (alias `t`) of a view keyed by `kind` and `result_id` whose result changed, or whose campaign's name did. */
const viewRows = (d: FeedDialect, t: string) =>
  `((${t}.kind = 'session' AND ${t}.result_id IN (${changed(d, 'session')})) OR (${t}.kind = 'role' AND ${t}.result_id IN (${changed(d, 'role')})) OR ${t}.campaign_id IN (${renamed(d)}))`;

/** The campaigns reconcile --prune deleted a result from within the window. */
const prunedFrom = (d: FeedDialect) =>
  `SELECT b.campaign_id FROM tombstones b WHERE b.reason = 'pruned' AND b.campaign_id IS NOT NULL AND b.seq > ${d.from} AND b.seq <= ${d.to}`;

/** A candidate's campaign, the latest result's partition (the view's own expression). */
const group = (r: string) => `${r}.campaign_id, coalesce(${r}.candidate_id, ${r}.candidate_email)`;

/** Results (alias `r`, the `results` view) whose candidate's campaign had a result change or a prune within the window. */
const touched = (d: FeedDialect, r: string) =>
  `((${group(r)}) IN (SELECT ${group('c')} FROM results c WHERE ${viewRows(d, 'c')}) OR ${r}.campaign_id IN (${prunedFrom(d)}))`;

/** The tombstones of `kind` within the window, but those whose result came back since (its `replaced` row says it). */
const tombstones = (d: FeedDialect, kind: ResultKind) => {
  const table = RESULT_TABLE_OF[kind];
  return `SELECT '${kind}' AS kind, b.id, b.deleted_at, b.reason, b.seq FROM tombstones b WHERE b.table_name = '${table}' AND b.seq > ${d.from} AND b.seq <= ${d.to}
  AND NOT EXISTS (SELECT 1 FROM ${table} r WHERE r.id = b.id AND coalesce(r.change_seq, 0) > b.seq AND r.change_seq <= ${d.to})`;
};

/** A `replaced` deletion row of each result of `kind` that changed, dated when it changed. */
const replacedResults = (d: FeedDialect, kind: ResultKind) =>
  `SELECT '${kind}' AS kind, x.id, coalesce((SELECT ct.at FROM change_times ct WHERE ct.seq = x.change_seq), ${d.now}) AS deleted_at, 'replaced' AS reason, x.change_seq AS seq
  FROM ${RESULT_TABLE_OF[kind]} x WHERE ${numbered(d, 'x')}`;

/** A `replaced` deletion row of each result of `kind` whose campaign was new or renamed within the window. */
const renamedResults = (d: FeedDialect, kind: ResultKind) =>
  `SELECT '${kind}' AS kind, x.id, ${d.now} AS deleted_at, 'replaced' AS reason, cc.change_seq AS seq
  FROM ${RESULT_TABLE_OF[kind]} x JOIN campaigns cc ON cc.id = x.campaign_id WHERE ${numbered(d, 'cc')}`;

/**
 * The deletion rows of a feed of `kinds`: tombstones, then the results given again whole
 * (`replaced`: those that changed, and for a view those whose campaign's name did; or `replaced` itself).
 */
function deletions(d: FeedDialect, kinds: ResultKind[], replaced?: string | { renamed: true }): string {
  const again =
    typeof replaced === 'string'
      ? [replaced]
      : [...kinds.map((k) => replacedResults(d, k)), ...(replaced === undefined ? [] : kinds.map((k) => renamedResults(d, k)))];
  const parts = [...kinds.map((k) => tombstones(d, k)), ...again];
  return `SELECT kind, id, NULL AS campaign_id, deleted_at, reason FROM (${parts.join('\nUNION ALL\n')}) f ORDER BY seq, kind, id`;
}

/** The feed of `name` in dialect `d` (FEEDS says which kind it is). */
export function feedSql(name: ExportTable, d: FeedDialect): FeedSql {
  switch (name) {
    case 'campaigns':
      return {};
    case 'session-results':
      return { rows: numbered(d, 't') };
    // Read through a view that rebuilds raw (PostgreSQL's role_results_full), which has no change number.
    case 'role-results':
      return { rows: `t.id IN (${changed(d, 'role')})` };
    case 'score-details':
      return { rows: `t.role_result_id IN (${changed(d, 'role')})`, deletions: deletions(d, ['role']) };
    case 'eval-results':
      return {
        rows: `((t.parent_type = 'session_result' AND t.parent_id IN (${changed(d, 'session')})) OR (t.parent_type = 'score_detail' AND t.parent_id IN (SELECT sd.id FROM score_details sd WHERE sd.role_result_id IN (${changed(d, 'role')}))))`,
        extra: `CASE WHEN t.parent_type = 'session_result' THEN t.parent_id ELSE (SELECT sd.role_result_id FROM score_details sd WHERE sd.id = t.parent_id) END AS ${RESULT_ID_COLUMN}`,
        deletions: deletions(d, KINDS),
      };
    case 'results':
    case 'skill_scores':
      return { rows: viewRows(d, 't'), deletions: deletions(d, KINDS, { renamed: true }) };
    case 'latest_results':
      return {
        rows: touched(d, 't'),
        deletions: deletions(
          d,
          KINDS,
          `SELECT r.kind, r.result_id AS id, ${d.now} AS deleted_at, 'replaced' AS reason, ${d.to} AS seq FROM results r WHERE ${touched(d, 'r')}`,
        ),
      };
  }
}
