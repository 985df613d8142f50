/**
 * The simulator's control routes, for users rehearsing a pipeline (and tests): change one served
 * result on demand, as the real service's own changes would, instead of waiting for `--churn`.
 *
 *   POST /_simulator/results/<id>/rescore   a new score and updated_at (simulator/changes.ts rescore)
 *   POST /_simulator/results/<id>/delete    no longer served (a deletion reconcile --prune finds)
 *
 * Both need the API key, as every route does; the answer names the record's campaign and index.
 * They are not part of the service's interface: a client of the real service never sees them.
 */
import type { SimChanges } from './changes.js';
import type { SimCampaign, SimData } from './data.js';
import { HttpError } from './query.js';

const ROUTE = /^\/_simulator\/results\/([^/]+)\/(rescore|delete)$/;

/** Whether a path is a control route (answered by `control`, never by the service's routes). */
export function isControl(pathname: string): boolean {
  return pathname.startsWith('/_simulator/');
}

/** The campaign and index of the result served with `id` now, if any. */
function find(data: SimData, now: number, id: string): { campaign: SimCampaign; index: number } | undefined {
  for (const campaign of data.campaigns) {
    const session = campaign.type === 'SESSION_COMPLETION';
    if (!session && campaign.type !== 'ROLE_SUBMISSION') continue;
    const count = data.count(now, campaign);
    for (let i = 0; i < count; i++) {
      const r = session ? data.sessionResult(campaign, i) : data.roleResult(campaign, i, 'OVERALL');
      if (r.id === id) return { campaign, index: i };
    }
  }
  return undefined;
}

/** Applies a control request; returns the answer's body, or throws HttpError (404 unknown route or record, 405 not POST). */
export function control(method: string | undefined, pathname: string, data: SimData, changes: SimChanges, now: number): string {
  const m = ROUTE.exec(pathname);
  if (!m) throw new HttpError(404, 'Not found');
  if (method !== 'POST') throw new HttpError(405, 'Method not allowed');
  const id = decodeURIComponent(m[1] as string);
  const found = find(data, now, id);
  if (found === undefined) throw new HttpError(404, `No result ${id}`);
  if (m[2] === 'rescore') changes.rescore(found.campaign, found.index, now);
  else changes.remove(found.campaign, found.index);
  return JSON.stringify({ id, campaign_id: found.campaign.id, index: found.index, change: m[2] });
}
