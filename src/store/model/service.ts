/**
 * One mirror, one service: the service a mirror mirrors is its base URL (normalised by
 * config/config.ts serviceUrl), recorded in `meta` under SERVICE_KEY, by SQLite and PostgreSQL
 * alike, when the mirror is first synced. A pull, watch, reconcile, quarantine retry or `campaigns`
 * with another URL is refused before anything is written: records of two services mixed in one
 * mirror (ids that may collide, checkpoints that mean nothing to the other) cannot be told apart
 * afterwards. A mirror from before it records nothing and adopts the first URL it is synced with; so
 * does a mirror that holds nothing of the service it records (no campaign, no stream: a first pull
 * with a mistyped URL that never answered), whose next pull would otherwise be refused for a typo.
 */

/** The `meta` key of the service's URL. */
export const SERVICE_KEY = 'service_url';

/** The service a command syncs the mirror with. */
export interface ServiceClaim {
  /** Its base URL, normalised (never with credentials: the URL is refused with them). */
  url: string;
  /** Record it in place of another one (`--switch-service`: the service moved to this URL). */
  replace: boolean;
  /** What set the URL (`--base-url`, CAMPAIGN_SYNC_BASE_URL, a profile's key), for the message. */
  where: string;
}

/**
 * What a claim does to the URL a mirror records: nothing, record it, or, for another service, `held`:
 * refuse the command when the mirror holds any campaign or stream, else record it (HELD_SQL).
 */
export function serviceDecision(recorded: string | undefined, claim: ServiceClaim): 'keep' | 'record' | 'held' {
  if (recorded === claim.url) return 'keep';
  return recorded === undefined || claim.replace ? 'record' : 'held';
}

/**
 * What a switch to another URL (`--switch-service`) does to the campaign lists the mirror kept per
 * lister (store/model/streams.ts listingKey): each was the old URL's, so they go; the new URL's
 * first list is then the one that says which campaigns the service no longer lists. Shared by SQLite
 * and PostgreSQL.
 */
export const SWITCH_FORGETS_LISTS = "DELETE FROM meta WHERE key LIKE 'listed!_by:%' ESCAPE '!'";

/** Whether a mirror holds anything of a service (a campaign of its list, a stream): `held` (1) or not (0). Shared by SQLite and PostgreSQL. */
export const HELD_SQL = 'SELECT CASE WHEN EXISTS (SELECT 1 FROM campaigns) OR EXISTS (SELECT 1 FROM sync_state) THEN 1 ELSE 0 END AS held';

/** The one line a refused claim says (a usage error, exit 2): both services, and the two ways on. */
export function otherServiceMessage(mirror: string, recorded: string, claim: ServiceClaim): string {
  return (
    `${claim.where}: ${mirror} mirrors the service at ${recorded}, not ${claim.url}; one mirror mirrors one service: ` +
    `use another --db for ${claim.url}, or, if the service moved there, pass --switch-service to record it (records and checkpoints stay)`
  );
}
