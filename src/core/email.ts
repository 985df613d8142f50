/**
 * When two e-mail addresses are the same candidate's, for `forget --user`: equal ignoring case for all
 * of Unicode, whether their accented letters were sent composed or decomposed. One function for every
 * store (SQLite tables, NDJSON lines, PostgreSQL), so the match cannot drift between them: SQLite's
 * lower() folds ASCII only, and PostgreSQL's follows the database's locale.
 */

/**
 * The form compared: NFC, JavaScript's lower case (Unicode's default mapping, the same in every
 * locale), and NFC again so the key is composed whatever lowering produced.
 */
export function emailKey(email: string): string {
  return email.normalize('NFC').toLowerCase().normalize('NFC');
}
