/**
 * The audit trail as earlier builds made it, for tests that upgrade such a mirror. SQLite's version 9
 * and PostgreSQL's version 7, as released (their files are frozen), made it without the request id of
 * a version's page: `change_times` without `request_id`, triggers that copy none and a
 * `result_versions` that gives NULL; version 12 adds them. Builds between a release and version 12
 * ran PostgreSQL's version 7 edited in place (PG_EDITED_V7).
 */

import { V7 } from '../../src/store/pg/migrations/v7.js';
import { V12 } from '../../src/store/pg/migrations/v12.js';
import { V9 } from '../../src/store/sqlite/migrations/v9.js';

/** SQLite's version 9 as released. */
export const FIRST_V9 = V9;

const SQLITE_TRIGGERS = ['session_results_version', 'session_results_pruned', 'role_results_version', 'role_results_pruned'];

/** Turns a SQLite mirror of today into one a build with the released version 9 upgraded to 11. */
export const SQLITE_FIRST_TRAIL = `DROP VIEW result_versions; ${SQLITE_TRIGGERS.map((t) => `DROP TRIGGER ${t};`).join(' ')}
ALTER TABLE change_times DROP COLUMN request_id;
${FIRST_V9.slice(FIRST_V9.indexOf('\nCREATE TRIGGER'))}
PRAGMA user_version = 11;`;

/** The trigger functions, triggers, view and function a PostgreSQL step makes, from its first function on. */
const functionsOf = (step: string) => step.slice(step.indexOf('\nCREATE OR REPLACE FUNCTION'));

/** Turns a PostgreSQL mirror of today into one a build with the released version 7 upgraded to 11. */
export const PG_FIRST_TRAIL = `DROP VIEW result_versions CASCADE; ALTER TABLE change_times DROP COLUMN request_id;
${functionsOf(V7)}
UPDATE meta SET value = '11' WHERE key = 'schema_version';`;

const RELEASED_TIMES = 'change_times (seq bigint PRIMARY KEY, at timestamptz NOT NULL);';
if (!V7.includes(RELEASED_TIMES)) throw new Error('version 7 makes change_times otherwise');

/**
 * PostgreSQL's version 7 as the builds between its release and version 12 ran it, edited in place:
 * `change_times.request_id` made with the table, and the functions, triggers and view that version
 * 12 makes.
 */
export const PG_EDITED_V7 = `${V7.slice(0, V7.indexOf('\nCREATE OR REPLACE FUNCTION')).replace(
  RELEASED_TIMES,
  'change_times (seq bigint PRIMARY KEY, at timestamptz NOT NULL, request_id text);',
)}${functionsOf(V12)}`;
