/** What a page's write did to a mirror, whichever backend wrote it. */

/**
 * What a page did to the mirror: records new to it, and records whose content changed (a record read
 * again unchanged is neither). A record whose id another campaign's stream stored first is neither
 * too: it is left to that campaign (store/sqlite/conflicts.ts), and named in `conflicts` when this is the
 * first time its stream was served it.
 */
export interface UpsertCounts {
  inserted: number;
  updated: number;
  conflicts?: IdConflict[] | undefined;
}

/** A record served by this stream's campaign whose id another campaign holds: the id, and that campaign. */
export interface IdConflict {
  id: string;
  kept: string;
}
