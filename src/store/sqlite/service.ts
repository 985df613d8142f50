/** The service a SQLite mirror mirrors, in `meta` (store/model/service.ts says why and when). */
import { storageError, UsageError } from '../../errors.js';
import { HELD_SQL, otherServiceMessage, SERVICE_KEY, type ServiceClaim, SWITCH_FORGETS_LISTS, serviceDecision } from '../model/service.js';
import type { Db } from './db.js';

/**
 * Records the claim's URL where the mirror records none (or `replace`, or holds nothing of the one it
 * records), or throws a UsageError naming both when it records another. Returns the URL a `replace`
 * took the place of, for a run that fails to put back (restoreSqliteService). The mirror's own URL is
 * only read: a pull takes no write lock for it (a watch reopening a mirror another program keeps
 * locked fails its pass, not its start). Anything else is decided again in one write transaction,
 * taken at once: a `campaigns` (which holds no run lock) and a pull claiming together cannot both
 * record theirs.
 */
export function claimSqliteService(db: Db, claim: ServiceClaim, mirror: string): string | undefined {
  const read = db.prepare('SELECT value FROM meta WHERE key = ?').pluck();
  try {
    if (read.get(SERVICE_KEY) === claim.url) return undefined;
    return db
      .transaction(() => {
        const recorded = read.get(SERVICE_KEY) as string | undefined;
        const decision = serviceDecision(recorded, claim);
        if (decision === 'keep') return undefined;
        if (decision === 'held' && (db.prepare(HELD_SQL).pluck().get() as number) === 1)
          throw new UsageError(otherServiceMessage(mirror, recorded as string, claim));
        db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
          SERVICE_KEY,
          claim.url,
        );
        // The old URL's campaign lists say nothing of the new one's (SWITCH_FORGETS_LISTS).
        if (recorded !== undefined) db.prepare(SWITCH_FORGETS_LISTS).run();
        return recorded;
      })
      .immediate();
  } catch (err) {
    throw storageError(err, `cannot write to ${mirror}`);
  }
}

/**
 * Puts back the URL a `--switch-service` replaced, after a run at the new URL that failed (a typo, a
 * wrong key): the switch is kept only by a run that succeeds there. Left as it is when another run
 * has recorded something else meanwhile.
 */
export function restoreSqliteService(db: Db, claimed: string, previous: string, mirror: string): void {
  try {
    db.prepare('UPDATE meta SET value = ? WHERE key = ? AND value = ?').run(previous, SERVICE_KEY, claimed);
  } catch (err) {
    throw storageError(err, `cannot write to ${mirror}`);
  }
}
