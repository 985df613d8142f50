/**
 * What the contract tests of `export --since-last` share: the simulator's campaigns by type, NDJSON
 * files read back, and candidate B nested in another's record (their score detail inside host's
 * DETAILED role result), whose `forget` must rewrite the host's result and reach every consumer.
 */
import { readFileSync } from 'node:fs';
import type { RunningSimulator } from '../../src/simulator/server.js';

export type Row = Record<string, unknown>;
export type Campaign = RunningSimulator['data']['campaigns'][number];

/** An NDJSON file's rows. */
export const ndjson = (path: string): Row[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Row);

/** The simulator's first campaign of `type`. */
export function campaignOf(s: RunningSimulator, type: Campaign['type']): Campaign {
  const c = s.data.campaigns.find((x) => x.type === type);
  if (!c) throw new Error(`the simulator serves no ${type} campaign`);
  return c;
}

/**
 * Makes the simulator serve candidate B (the user of session record 6) nested in the host's result
 * (role record 4, DETAILED) as an extra score detail `nested-detail-b`; returns who is who.
 */
export function nestCandidate(s: RunningSimulator) {
  const role = campaignOf(s, 'ROLE_SUBMISSION');
  const session = campaignOf(s, 'SESSION_COMPLETION');
  const host = s.data.roleResult(role, 4, 'DETAILED') as Row;
  const own = s.data.sessionResult(session, 6) as Row;
  const b = own.user as { id: string; email: string };
  if ((host.user as { id: string }).id === b.id) throw new Error('the host and B are one candidate');
  const roleResult = s.data.roleResult.bind(s.data);
  s.data.roleResult = (c, i, report, created) => {
    const r = roleResult(c, i, report, created) as Row;
    if (c.id !== role.id || i !== 4 || report !== 'DETAILED') return r;
    const details = r.score_details as Row[];
    return { ...r, score_details: [...details, { ...(details[0] as Row), id: 'nested-detail-b', user: { ...b } }] };
  };
  return { role, session, host, own, b };
}
