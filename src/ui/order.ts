/**
 * People's order for names (status lists streams by campaign name), as `a.localeCompare(b)` gives it,
 * without paying for the locale's collation where it cannot matter: its first use loads ICU's
 * collation data, a measurable share of `status` (docs/performance.md).
 *
 * Where the locale is English, C or POSIX (what ICU takes from LC_ALL, LC_MESSAGES or LANG, in that
 * order), strings of lower-case ASCII letters, digits, spaces, `-` and `/` collate as their code
 * points: space, then `-`, then `/`, then digits, then letters. Campaign names, UUIDs and stream ids
 * are such strings. Anything else, or any other locale (Danish puts `aa` after `z`, Estonian `z`
 * after `s`), goes to localeCompare. test/soak/ui/order.test.ts holds the two to the same order.
 */
const PLAIN = /^[a-z0-9 /-]*$/;

/** Whether the process's ICU locale collates plain strings by code point. */
function codePointLocale(): boolean {
  const name = process.env.LC_ALL ?? process.env.LC_MESSAGES ?? process.env.LANG ?? '';
  return name === '' || /^(C|POSIX)([.@]|$)/.test(name) || /^en([_.@-]|$)/i.test(name);
}
let plainLocale: boolean | undefined;

/** `a.localeCompare(b)`, in sign. */
export function compareNames(a: string, b: string): number {
  plainLocale ??= codePointLocale();
  if (plainLocale && PLAIN.test(a) && PLAIN.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return a.localeCompare(b);
}
