/** The service a PostgreSQL mirror mirrors, in `meta` (store/model/service.ts says why and when). */
import { UsageError } from '../../errors.js';
import { HELD_SQL, otherServiceMessage, SERVICE_KEY, type ServiceClaim, SWITCH_FORGETS_LISTS, serviceDecision } from '../model/service.js';
import type { PgDatabase } from './database.js';

/**
 * Records the claim's URL where the mirror records none (or `replace`, or holds nothing of the one it
 * records), or throws a UsageError naming both when it records another. Returns the URL a `replace`
 * took the place of, for a run that fails to put back (restorePgService). The mirror's own URL is
 * only read (a fleet's workers starting together write nothing for it). Anything else is decided in
 * one transaction: the first of the workers to claim a URL wins (INSERT … DO NOTHING, then the row
 * read back locked), so two claiming different URLs at once cannot both record theirs.
 */
export async function claimPgService(db: PgDatabase, claim: ServiceClaim): Promise<string | undefined> {
  const current = await db.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [SERVICE_KEY]);
  if (current.rows[0]?.value === claim.url) return undefined;
  return db.transaction(async (client) => {
    await client.query('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [SERVICE_KEY, claim.url]);
    const r = await client.query<{ value: string }>('SELECT value FROM meta WHERE key = $1 FOR UPDATE', [SERVICE_KEY]);
    const recorded = r.rows[0]?.value;
    const decision = serviceDecision(recorded, claim);
    if (decision === 'keep') return undefined;
    if (decision === 'held' && (await client.query<{ held: number }>(HELD_SQL)).rows[0]?.held === 1)
      throw new UsageError(otherServiceMessage(db.name, recorded as string, claim));
    await client.query('UPDATE meta SET value = $2 WHERE key = $1', [SERVICE_KEY, claim.url]);
    if (recorded === claim.url) return undefined;
    // The old URL's campaign lists say nothing of the new one's (SWITCH_FORGETS_LISTS).
    await client.query(SWITCH_FORGETS_LISTS);
    return recorded;
  });
}

/**
 * Puts back the URL a `--switch-service` replaced, after a run at the new URL that failed: the switch
 * is kept only by a run that succeeds there. Left as it is when another worker recorded something else.
 */
export async function restorePgService(db: PgDatabase, claimed: string, previous: string): Promise<void> {
  await db.query('UPDATE meta SET value = $1 WHERE key = $2 AND value = $3', [previous, SERVICE_KEY, claimed]);
}
