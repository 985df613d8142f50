/**
 * Version 14: a JSON column the record left out or sent as JSON null is SQL NULL, as in SQLite.
 * Pages written before stored it as jsonb `null` (a CSV export then wrote the text `null`, and
 * `feedback IS NULL` missed it); those cells become NULL. Change numbers stay: no record changed.
 * It may run again on a schema that has it.
 */
export const V14 = `
UPDATE session_results SET feedback = NULL WHERE feedback = 'null'::jsonb;
UPDATE session_results SET additional_scores = NULL WHERE additional_scores = 'null'::jsonb;
UPDATE role_results SET additional_scores = NULL WHERE additional_scores = 'null'::jsonb;
UPDATE score_details SET feedback = NULL WHERE feedback = 'null'::jsonb;
`;
