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

/** What stands in a stored text for an erased candidate's e-mail or id. */
export const ERASED_IN_TEXT = '[erased]';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `text` (an error message the service sent, kept as a stream's last error) without a candidate's
 * e-mail or ids: each of `terms` where it stands as a whole word, ignoring case for all of Unicode,
 * becomes ERASED. A term inside a longer name or number (`u1` in `u10`, `a@b.c` in `xa@b.co`) is
 * left, so a short id does not blank out the rest of the message. A term percent-encoded (in a
 * quoted URL) is found too; one escaped inside a JSON string (`jos\u00e9`) is not.
 */
export function withoutCandidate(text: string, terms: readonly string[]): string {
  // Each also as a URL writes it (`person%40example.com`): an error may quote the request's URL.
  const written = terms.filter((t) => t !== '').map((t) => t.normalize('NFC'));
  const words = [...new Set([...written, ...written.map((t) => encodeURIComponent(t))])];
  if (words.length === 0) return text;
  // Longest first: an e-mail before an id it may contain.
  words.sort((a, b) => b.length - a.length);
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_.@+-])(?:${words.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}_@-]|\\.[\\p{L}\\p{N}])`,
    'giu',
  );
  const composed = text.normalize('NFC');
  const scrubbed = composed.replace(pattern, ERASED_IN_TEXT);
  // Unchanged as it was stored (a decomposed text is not rewritten, nor counted as scrubbed).
  return scrubbed === composed ? text : scrubbed;
}

/** A stream's stored last error. */
export interface StoredError {
  stream: string;
  last_error: string;
}

/**
 * The stored errors that name the candidate, as they are to be stored now (withoutCandidate over
 * `terms`): what `forget` rewrites in either mirror's sync_state.
 */
export function errorsWithout(rows: readonly StoredError[], terms: readonly string[]): StoredError[] {
  return rows.flatMap((row) => {
    const text = withoutCandidate(row.last_error, terms);
    return text === row.last_error ? [] : [{ stream: row.stream, last_error: text }];
  });
}

/** What `forget` removed, in either mirror (SQLite's also names the NDJSON files it rewrote). */
export interface ErasedCounts {
  session_results: number;
  role_results: number;
  score_details: number;
  eval_results: number;
  /**
   * Other candidates' records kept without the erased one's part in them (a score detail of theirs,
   * any nested `user` of theirs, their e-mail as a value).
   */
  records_changed: number;
  /** Past versions of results (result_versions) removed: every version of a record of theirs. */
  result_versions: number;
  /** Streams' last errors that named the candidate, scrubbed. */
  error_texts: number;
  /** Quarantined records that named the candidate, deleted (store/sqlite/quarantine.ts). */
  quarantined?: number | undefined;
}

/** A stored record's candidate: what their erasure removes from other texts too. */
export interface Identity {
  user_id: string | null;
  user_email: string | null;
}

/** The ids and e-mails of the erased rows, once each. */
export function identities(rows: readonly Identity[]): string[] {
  return [...new Set(rows.flatMap((r) => [r.user_id, r.user_email]).filter((v): v is string => typeof v === 'string'))];
}
