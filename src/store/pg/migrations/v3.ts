/**
 * Version 3: records stored inline and uncompressed up to a whole page (8160 bytes), as SQLite stores them: with
 * the default target (2032 bytes) a session result's `raw` (~2 KB) was pglz-compressed on most
 * inserts, a quarter of the server's CPU for a session pull. Rows already stored stay as they are.
 */
export const V3 = ['session_results', 'role_results', 'score_details']
  .map((t) => `ALTER TABLE ${t} SET (toast_tuple_target = 8160);`)
  .join('\n');
