/**
 * Version 12: every mirror's versions keep the request id of the page that brought them. Version 7
 * first shipped without `change_times.request_id`, its trigger functions copying none and
 * `result_versions` giving NULL; a schema upgraded then cannot take today's writes, which record the
 * page's request id there. This step adds the column where it is missing (its rows keep NULL:
 * unknown for versions seen before it) and makes the trigger functions, the triggers, the view and
 * `results_as_of` again as version 7 makes them now, so that every schema at version 12 is the same,
 * whichever build upgraded it to 7. It may run again on a schema that has it.
 */
import { V7 } from './v7.js';

const FROM = V7.indexOf('\nCREATE OR REPLACE FUNCTION');
if (FROM < 0) throw new Error('version 7 makes no trigger functions');

export const V12 = `
ALTER TABLE change_times ADD COLUMN IF NOT EXISTS request_id text;
${V7.slice(FROM)}`;
