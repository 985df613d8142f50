/**
 * The audit trail as SQLite's version 9 and PostgreSQL's version 7 first made it, before versions kept
 * the request id of their page: `change_times` without `request_id`, triggers that copy none and a
 * `result_versions` that gives NULL. Rebuilt from today's steps, the request id's reads made NULL.
 */

import { V7 } from '../../src/store/pg/migrations/v7.js';
import { V9 } from '../../src/store/sqlite/migrations/v9.js';

const REQUEST_OF = /\(SELECT t\.request_id FROM change_times t WHERE t\.seq = [\w.]+\)/g;
const withoutRequestIds = (sql: string) => sql.replace(REQUEST_OF, 'NULL');

/** SQLite's version 9 as first shipped. */
export const FIRST_V9 = withoutRequestIds(V9).replace('at TEXT NOT NULL, request_id TEXT)', 'at TEXT NOT NULL)');

const SQLITE_TRIGGERS = ['session_results_version', 'session_results_pruned', 'role_results_version', 'role_results_pruned'];

/** Turns a SQLite mirror of today into one a build with the first version 9 upgraded to 11. */
export const SQLITE_FIRST_TRAIL = `DROP VIEW result_versions; ${SQLITE_TRIGGERS.map((t) => `DROP TRIGGER ${t};`).join(' ')}
ALTER TABLE change_times DROP COLUMN request_id;
${FIRST_V9.slice(FIRST_V9.indexOf('\nCREATE TRIGGER'))}
PRAGMA user_version = 11;`;

const FIRST_V7 = withoutRequestIds(V7);

/** Turns a PostgreSQL mirror of today into one a build with the first version 7 upgraded to 11. */
export const PG_FIRST_TRAIL = `DROP VIEW result_versions CASCADE; ALTER TABLE change_times DROP COLUMN request_id;
${FIRST_V7.slice(FIRST_V7.indexOf('\nCREATE OR REPLACE FUNCTION'))}
UPDATE meta SET value = '11' WHERE key = 'schema_version';`;
