/**
 * A retention setting (`--retention`, a profile's `retention`) as pull and watch apply it: the
 * results dated before now minus the retention are erased (store/model/erase-rule.ts) at most once a
 * day, when a pull or watch opens the mirror and, for a watch, between passes. When it last ran is
 * kept in the mirror's `meta` (RETENTION_RAN_KEY), so a restart neither runs it again at once nor
 * puts it off: it runs again once a day has passed since, whoever opens the mirror.
 */

/** The `meta` key of when a retention last ran (ISO 8601). */
export const RETENTION_RAN_KEY = 'retention_ran_at';

/** How often a retention runs at most. */
export const RETENTION_EVERY_MS = 86_400_000;

/** Whether a retention that last ran at `ranAt` (ISO 8601, or none) is due at `now`. */
export function retentionDue(ranAt: string | undefined, now: number): boolean {
  if (ranAt === undefined) return true;
  const at = Date.parse(ranAt);
  // A time in the future (a clock set back since) or unreadable: run now, and record now.
  return !Number.isFinite(at) || at > now || now - at >= RETENTION_EVERY_MS;
}
