/**
 * Where the service's operations live (spec §4) and which results endpoint a campaign type is read
 * from (§1): the one routing table, used by the client, the sync plan, `status` and the simulator.
 */
import type { Endpoint } from '../core/types.js';

export const CAMPAIGN_TYPES = ['SESSION_COMPLETION', 'ROLE_SUBMISSION'] as const;

/** Campaign type -> results endpoint; any other type is skipped with a warning. */
export const ROUTES: Readonly<Record<string, Endpoint>> = { SESSION_COMPLETION: 'session', ROLE_SUBMISSION: 'role' };

export const CAMPAIGNS_PATH = '/v1/campaigns';

/** `/v1/campaigns/session/results` or `/v1/campaigns/role/results`. */
export function resultsPath(endpoint: Endpoint): string {
  return `/v1/campaigns/${endpoint}/results`;
}

/** The endpoint for a campaign type, or undefined for a type campaign-sync cannot read. */
export function endpointFor(type: unknown): Endpoint | undefined {
  return typeof type === 'string' && Object.hasOwn(ROUTES, type) ? ROUTES[type] : undefined;
}
