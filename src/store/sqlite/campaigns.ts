/**
 * The campaign list as the service last sent it (`campaigns`): upserts, names for people, lookups by
 * name, and the campaigns a pull skips because spec/paths.ts routes no endpoint for their type.
 */
import { type CampaignCandidate, idsSelected, PREFIX_MIN } from '../../core/campaign-selector.js';
import { ROUTES } from '../../spec/paths.js';
import { campaignRow } from '../model/rows.js';
import { listingKey, listingValue, type SkippedRow } from '../model/streams.js';
import { CURRENT_SEQ, NEXT_SEQ_SQL } from './changes.js';
import type { Db } from './db.js';
import { upsert } from './sql.js';

export type { SkippedRow };

export class Campaigns {
  private readonly s;

  constructor(private readonly db: Db) {
    // The supported types are the routing table's: a type added there stops being listed here.
    const routed = Object.keys(ROUTES);
    this.s = {
      upsert: db.prepare(upsert('campaigns')),
      nameOf: db.prepare('SELECT name FROM campaigns WHERE id = ?'),
      next: db.prepare(NEXT_SEQ_SQL),
      stamp: db.prepare(`UPDATE campaigns SET change_seq = ${CURRENT_SEQ} WHERE id = ?`),
      listing: db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      names: db.prepare('SELECT id, coalesce(name, display_name, id) AS name FROM campaigns'),
      named: db.prepare('SELECT id FROM campaigns WHERE name = ?').pluck(),
      // An id prefix only from PREFIX_MIN characters on (core/campaign-selector.ts decides among the rows).
      candidates: db.prepare(
        'SELECT id, name FROM campaigns WHERE id = @s OR name = @s OR (length(@s) >= @min AND substr(id, 1, length(@s)) = @s)',
      ),
      type: db.prepare('SELECT type FROM campaigns WHERE id = ?').pluck(),
      skipped: db.prepare(
        `SELECT id, name, type FROM campaigns WHERE type IS NULL OR type NOT IN (${routed.map(() => '?').join(', ')}) ORDER BY name`,
      ),
      routed,
    };
  }

  /**
   * Upserts campaigns (in the caller's transaction if there is one); with `lister`, the list is that
   * lister's newest (store/sqlite/checkpoints.ts, listings). A campaign new or renamed takes a change
   * number, one for the list (store/sqlite/changes.ts): the views' feeds give its results again.
   */
  upsert(campaigns: Array<Record<string, unknown>>, seenAt: string, lister?: string): void {
    this.db.transaction(() => {
      let numbered = false;
      for (const c of campaigns) {
        const row = campaignRow(c, seenAt);
        const id = row[row.length - 1];
        const before = this.s.nameOf.get(id) as { name: unknown } | undefined;
        this.s.upsert.run(...row);
        if (before !== undefined && before.name === row[0]) continue;
        if (!numbered) this.s.next.run();
        numbered = true;
        this.s.stamp.run(id);
      }
      if (lister !== undefined) {
        this.s.listing.run(
          listingKey(lister),
          listingValue(
            campaigns.map((c) => String(c.id)),
            seenAt,
          ),
        );
      }
    })();
  }

  /** Campaign id -> the name people know it by: its name, else its display name, else its id. */
  names(): Map<string, string> {
    const rows = this.s.names.all() as Array<{ id: string; name: string }>;
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  /** The ids of the campaigns called `name` (names are not unique). */
  idsNamed(name: string): string[] {
    return this.s.named.all(name) as string[];
  }

  /**
   * The campaigns a selector names: its id, its name (which several may share), or a prefix of one
   * id; a prefix of several is a usage error listing them (core/campaign-selector.ts).
   */
  idsFor(selector: string): string[] {
    return idsSelected(selector, this.s.candidates.all({ s: selector, min: PREFIX_MIN }) as CampaignCandidate[]);
  }

  /** The type of campaign `id` as stored (null: none sent; undefined: no such campaign). */
  typeOf(id: string): string | null | undefined {
    return this.s.type.get(id) as string | null | undefined;
  }

  /** Campaigns of a type no endpoint reads (or of no type), by name. */
  skipped(): SkippedRow[] {
    return this.s.skipped.all(...this.s.routed) as SkippedRow[];
  }
}
