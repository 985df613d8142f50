/**
 * Personal data out of a text that leaves this host and cannot be called back: a `--notify`
 * document goes to a chat or an incident tool, where `forget` never reaches. The service's error
 * messages may quote a candidate ("no result for jane@example.com", "user_id=u-42 is not in this
 * campaign"), and a stream's stored error keeps its words; what is sent carries neither.
 *
 * Unlike core/email.ts `withoutCandidate`, which takes out one known person's e-mail and ids, this
 * knows nobody: it masks what has the shape of an e-mail address, and the value that follows a word
 * naming a user (`user`, `user_id`, `userId`, `candidate`, `candidate_id`, `email`). Ids that name
 * no person stay: campaign ids, request ids and record ids are what a receiver needs to act.
 */

/** What an e-mail address is replaced with. */
export const EMAIL_MASK = '[e-mail]';
/** What a user's id is replaced with. */
export const USER_MASK = '[user id]';

/**
 * An address, also as a URL writes it (`jane%40example.com`): a local part of letters, digits and
 * `._%+-`, then `@` or `%40`, then a domain of at least two labels. Letters of any script.
 */
const EMAIL = /[\p{L}\p{N}._%+-]*[\p{L}\p{N}_+-](?:@|%40)[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/giu;

/**
 * A word naming a user, what stands between it and the value (`: `, `=`, a space, with the quote
 * that closes a JSON member's name), and the value: quoted, or a run without spaces. A bare value
 * must hold a digit, so that `user not found` keeps its words; a quoted one is masked whatever it
 * holds. Between word and value there must be something, so that a name such as `user-research-2`
 * is no user's.
 */
const USER_VALUE =
  /(?<![\p{L}\p{N}_])(user[_-]?id|userid|user|candidate[_-]?id|candidate|email)(["']?\s*[:=]\s*|["']?\s+)(?:"([^"]*)"|'([^']*)'|([\p{L}\p{N}._~%+-]*\p{N}[\p{L}\p{N}._~%+-]*))/giu;

/** `text` with e-mail addresses and users' ids masked (EMAIL_MASK, USER_MASK); anything else kept as it was. */
export function maskPersonal(text: string): string {
  return text
    .replace(EMAIL, EMAIL_MASK)
    .replace(USER_VALUE, (whole, word: string, between: string, double?: string, single?: string, bare?: string) => {
      const value = double ?? single ?? bare ?? '';
      // Nothing there, or already masked as an e-mail: kept.
      if (value === '' || value === EMAIL_MASK) return whole;
      const quote = double !== undefined ? '"' : single !== undefined ? "'" : '';
      // A sentence's full stop after a bare id is the sentence's.
      const stop = bare?.endsWith('.') ? '.' : '';
      return `${word}${between}${quote}${USER_MASK}${quote}${stop}`;
    });
}
