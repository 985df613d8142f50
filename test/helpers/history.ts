/**
 * The simulator's history as retention tests see it: every result it serves with its date, and a cut
 * through the middle of that history for `--older-than`.
 */
import { expect } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';

export interface ServedResult {
  id: string;
  /** created_at, in ms since the epoch. */
  created: number;
  email: string;
  userId: string;
  /** Its score details' ids (a DETAILED role result's). */
  details: string[];
}

/** The first `perCampaign` results of each of the simulator's campaigns (DETAILED for role campaigns). */
export function servedResults(s: RunningSimulator, perCampaign: number): ServedResult[] {
  const out: ServedResult[] = [];
  for (const c of s.data.campaigns) {
    for (let i = 0; i < perCampaign; i++) {
      const r = (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED')) as {
        id: string;
        created_at: string;
        user: { id: string; email: string };
        score_details?: Array<{ id: string }>;
      };
      out.push({
        id: r.id,
        created: Date.parse(r.created_at),
        email: r.user.email,
        userId: r.user.id,
        details: (r.score_details ?? []).map((d) => d.id),
      });
    }
  }
  return out;
}

export interface HistoryCut<T> {
  old: T[];
  young: T[];
  /** The cut, in ms since the epoch. */
  at: number;
  /** The cut as an --older-than duration, from now. */
  duration: () => string;
}

/**
 * A cut in the middle third of the history, in the widest gap there (at least an hour wide, far from
 * any record: the test's clock moves between computing it and the command's reading of it).
 */
export function cutOf<T extends { created: number }>(records: T[]): HistoryCut<T> {
  const times = [...new Set(records.map((r) => r.created))].sort((a, b) => a - b);
  let best = { gap: 0, at: 0 };
  for (let k = Math.floor(times.length / 3); k < Math.floor((2 * times.length) / 3); k++) {
    const gap = (times[k + 1] as number) - (times[k] as number);
    if (gap > best.gap) best = { gap, at: ((times[k] as number) + (times[k + 1] as number)) / 2 };
  }
  expect(best.gap).toBeGreaterThan(3_600_000);
  return {
    old: records.filter((r) => r.created < best.at),
    young: records.filter((r) => r.created >= best.at),
    at: best.at,
    duration: () => `${Math.round((Date.now() - best.at) / 1000)}s`,
  };
}
