/**
 * Which campaigns each lister (a service and API key: ApiClient.lister, a fingerprint) listed last, so
 * that a campaign the service no longer lists is told apart from one another key lists: workers with
 * different keys write one mirror side by side (a PostgreSQL team mirror), and each sees only its
 * own campaigns. A campaign is unlisted when no lister's newest list holds it; a mirror that has
 * recorded no list yet (written by an earlier release) calls nothing unlisted. Kept in `meta`, one row
 * per lister: `listed_by:<fingerprint>` → `{ "at", "ids" }`.
 */

/** The `meta` key of a lister's newest list. */
export const listingKey = (lister: string) => `listed_by:${lister}`;

/** `meta` keys of listings start so (a LIKE pattern). */
export const LISTING_KEYS = 'listed_by:%';

/** The value stored for a list. */
export function listingValue(ids: readonly string[], at: string): string {
  return JSON.stringify({ at, ids: [...new Set(ids)].sort() });
}

/** Every campaign id some lister listed last; undefined when none has recorded a list. */
export function listedIds(values: readonly string[]): Set<string> | undefined {
  if (values.length === 0) return undefined;
  const ids = new Set<string>();
  for (const value of values) {
    try {
      const parsed = JSON.parse(value) as { ids?: unknown };
      if (Array.isArray(parsed.ids)) for (const id of parsed.ids) ids.add(String(id));
    } catch {
      // A row this release did not write: it lists nothing.
    }
  }
  return ids;
}

/**
 * `unlisted_since` of a stream: when its campaign was last seen in a list (`seenAt`), if no lister's
 * newest list holds it; null while one does, or when nothing can be said.
 */
export function unlistedSince(campaignId: string, seenAt: string | null, listed: Set<string> | undefined): string | null {
  if (listed === undefined || seenAt === null || listed.has(campaignId)) return null;
  return seenAt;
}
