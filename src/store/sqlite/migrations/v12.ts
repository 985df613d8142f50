/**
 * Version 12: every mirror's versions keep the request id of the page that brought them. Version 9
 * first shipped without `change_times.request_id`, its triggers copying none and `result_versions`
 * giving NULL; a mirror upgraded then cannot take today's writes, which record the page's request id
 * there. This step adds the column where it is missing (its rows keep NULL: unknown for versions
 * seen before it) and makes the triggers and the view again as version 9 makes them now, so that
 * every mirror at version 12 holds the same schema, whichever build upgraded it to 9.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { V9 } from './v9.js';

const TRIGGERS = ['session_results_version', 'session_results_pruned', 'role_results_version', 'role_results_pruned'];

const FROM = V9.indexOf('\nCREATE TRIGGER');
if (FROM < 0) throw new Error('version 9 makes no triggers');
/** Version 9's triggers and view, as written out there (its tables and their rows are left as they are). */
const TRIGGERS_AND_VIEW = V9.slice(FROM);

export const V12 = `${TRIGGERS.map((t) => `DROP TRIGGER IF EXISTS ${t};`).join('\n')}
DROP VIEW IF EXISTS result_versions;`;

/** Adds the column where version 9 made none, then the triggers and the view that read it. */
export function requestIdsV12(db: BetterSqlite3.Database): number {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('change_times');
  if (!columns.includes('request_id')) db.exec('ALTER TABLE change_times ADD COLUMN request_id TEXT');
  db.exec(TRIGGERS_AND_VIEW);
  return 0;
}
