/** The campaign list in the PostgreSQL mirror: its upsert, names for people and lookups by selector (as store/sqlite/campaigns.ts). */
import { type CampaignCandidate, idsSelected, PREFIX_MIN } from '../../core/campaign-selector.js';
import { ROUTES } from '../../spec/paths.js';
import { campaignRow } from '../model/rows.js';
import { listingKey, listingValue, type SkippedRow } from '../model/streams.js';
import { CHANGE_CTES, CHANGE_SEQ } from './changes.js';
import type { PgDatabase } from './database.js';
import { rowParams, upsertChanged } from './statements.js';

const UPSERT = upsertChanged('campaigns', false);

/**
 * Numbers the campaigns of `$1` that are new or renamed since `$2` (their names before the upsert,
 * null for none), once their rows are written: one change number, taken as a page's is
 * (store/pg/changes.ts), so the views' feeds give their results again.
 */
const STAMP = `WITH ${CHANGE_CTES} UPDATE campaigns c SET change_seq = ${CHANGE_SEQ}
FROM unnest($1::text[], $2::text[], $3::boolean[]) AS b (id, name, known) WHERE c.id = b.id AND (NOT b.known OR c.name IS DISTINCT FROM b.name)`;

/** Upserts the campaign list (a pull's, or `campaigns`'), one row per id. */
export async function upsertCampaigns(
  db: PgDatabase,
  list: Array<Record<string, unknown>>,
  seenAt: string,
  lister?: string,
): Promise<void> {
  // One row per id, in id order: two workers upserting the same campaigns take row locks in the same order.
  const byId = new Map(list.map((c) => [String(c.id), c]));
  const rows = [...byId.keys()].sort().map((k) => campaignRow(byId.get(k) as Record<string, unknown>, seenAt));
  if (rows.length > 0) {
    const ids = [...byId.keys()].sort();
    const before = await db.query<{ id: string; name: string | null }>(
      'SELECT id, name FROM campaigns WHERE id = ANY($1::text[])',
      [ids],
      'cannot read',
    );
    const names = new Map(before.rows.map((r) => [r.id, r.name]));
    await db.query(UPSERT, rowParams('campaigns', rows), 'cannot write to');
    const changed = ids.filter((id, i) => !names.has(id) || names.get(id) !== rows[i]?.[0]);
    if (changed.length > 0) {
      await db.query(STAMP, [changed, changed.map((id) => names.get(id) ?? null), changed.map((id) => names.has(id))], 'cannot write to');
    }
  }
  // This lister's newest list (store/model/streams.ts, listings): its own row, so workers with other keys never touch it.
  if (lister !== undefined) {
    await db.query(
      'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [listingKey(lister), listingValue([...byId.keys()], seenAt)],
      'cannot write to',
    );
  }
}

/** Campaign id -> the name people know it by: its name, else its display name, else its id. */
export async function campaignNames(db: PgDatabase): Promise<Map<string, string>> {
  const r = await db.query<{ id: string; name: string }>('SELECT id, coalesce(name, display_name, id) AS name FROM campaigns');
  return new Map(r.rows.map((row) => [row.id, row.name]));
}

/**
 * The campaigns a selector names: its id, its name (which several may share), or a prefix of one id;
 * a prefix of several is a usage error listing them (core/campaign-selector.ts).
 */
export async function campaignIdsFor(db: PgDatabase, selector: string): Promise<string[]> {
  const r = await db.query<CampaignCandidate>(
    'SELECT id, name FROM campaigns WHERE id = $1 OR name = $1 OR (length($1) >= $2 AND left(id, length($1)) = $1)',
    [selector, PREFIX_MIN],
  );
  return idsSelected(selector, r.rows);
}

/** The type of campaign `id` as stored (null: none sent; undefined: no such campaign). */
export async function campaignType(db: PgDatabase, id: string): Promise<string | null | undefined> {
  return (await db.query<{ type: string | null }>('SELECT type FROM campaigns WHERE id = $1', [id])).rows[0]?.type;
}

/** Campaigns of a type no endpoint reads (or of no type), by name. */
export async function skippedCampaigns(db: PgDatabase): Promise<SkippedRow[]> {
  const routed = Object.keys(ROUTES);
  const r = await db.query<SkippedRow>(
    'SELECT id, name, type FROM campaigns WHERE type IS NULL OR NOT (type = ANY($1::text[])) ORDER BY name NULLS FIRST',
    [routed],
  );
  return r.rows;
}
