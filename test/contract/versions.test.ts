/**
 * The audit trail of results beyond its core case (./audit.test.ts keeps the versions, `export
 * --as-of`, `history` and `forget`), on every kind that keeps versions (./mirrors.ts says how to add a
 * case): an upgraded mirror starts its versions at the upgrade, a mirror whose versions kept no
 * request id keeps its pages' from its upgrade on, and a bad --as-of is a usage error.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { FIRST_V9, PG_FIRST_TRAIL, SQLITE_FIRST_TRAIL } from '../helpers/first-versions.js';
import { sim } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { alter, MIRRORS, type Mirror, type MirrorKind, ok, open, unsupported } from './mirrors.js';

/** Turns a mirror back into one the release before versions wrote (the steps after it too: the quarantine, drift, so that the upgrade runs them again). */
const DOWNGRADE: Record<MirrorKind, string> = {
  // The version before result_versions (SQLite v9): the later migrations run again, and may.
  sqlite: `DROP TABLE IF EXISTS drift_seen; DROP TABLE IF EXISTS quarantine; DROP VIEW result_versions; DROP TRIGGER session_results_version; DROP TRIGGER session_results_pruned;
    DROP TRIGGER role_results_version; DROP TRIGGER role_results_pruned; DROP TABLE past_versions; DROP TABLE change_times; PRAGMA user_version = 8;`,
  // NDJSON keeps no versions (LACKS).
  ndjson: '',
  postgres: `DROP TABLE IF EXISTS drift_seen; DROP TABLE IF EXISTS quarantine; DROP VIEW result_versions CASCADE; DROP TRIGGER session_results_version ON session_results; DROP TRIGGER role_results_version ON role_results;
    DROP TRIGGER session_results_pruned ON tombstones; DROP TRIGGER role_results_pruned ON tombstones; DROP TABLE past_versions, change_times;
    UPDATE meta SET value = '6' WHERE key = 'schema_version'`,
};

/** Turns a mirror into one upgraded (to 11) by a build whose versions kept no request id. */
const FIRST_TRAIL: Record<MirrorKind, string> = { sqlite: SQLITE_FIRST_TRAIL, ndjson: '', postgres: PG_FIRST_TRAIL };

async function change(s: RunningSimulator, id: string, what: 'rescore' | 'delete'): Promise<void> {
  const r = await fetch(`${s.url}/_simulator/results/${id}/${what}`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}` } });
  expect(r.status, await r.text()).toBe(200);
}

const versionsOf = (m: Mirror, id: string) =>
  m.sql(`SELECT version, deleted, valid_from, valid_to FROM result_versions WHERE id = '${id}' ORDER BY version`);

describe.each(MIRRORS)('result versions (%s)', (kind) => {
  it('an upgraded mirror holds its current rows as version 1, from the upgrade on', async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    const s = await sim({ campaigns: 2, records: 12 });
    const m = open(kind);
    await ok(m, s, 'pull');
    await alter(m, DOWNGRADE[kind]);
    const before = new Date().toISOString();
    await ok(m, s, 'pull');
    const after = new Date().toISOString();
    const all = await m.sql('SELECT version, valid_from, valid_to FROM result_versions');
    expect(all.length).toBeGreaterThan(0);
    for (const v of all) {
      expect(Number(v.version)).toBe(1);
      expect(v.valid_to).toBeNull();
      const from = new Date(v.valid_from as string).toISOString();
      expect(from >= before.slice(0, 23) && from <= after, from).toBe(true);
    }
    const c = s.data.campaigns.find((x) => x.type === 'SESSION_COMPLETION');
    const id = (c && s.data.sessionResult(c, 1).id) as string;
    await change(s, id, 'rescore');
    await ok(m, s, 'reconcile');
    expect((await versionsOf(m, id)).map((v) => Number(v.version))).toEqual([1, 2]);
  });

  it("a mirror whose versions kept no request id takes pulls again once upgraded: versions from then on keep their page's, older ones NULL", async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    expect(FIRST_V9).not.toContain('request_id FROM');
    expect(PG_FIRST_TRAIL).not.toContain('request_id FROM');
    const s = await sim({ campaigns: 2, records: 12 });
    const m = open(kind);
    const c = s.data.campaigns.find((x) => x.type === 'SESSION_COMPLETION');
    if (!c) throw new Error('no session campaign');
    const id = s.data.sessionResult(c, 2).id as string;
    await ok(m, s, 'pull');
    await alter(m, FIRST_TRAIL[kind]);
    await change(s, id, 'rescore');
    const from = s.stats.recentAnswers.length;
    await ok(m, s, 'reconcile');
    // The pages of this record's stream the simulator answered during the reconcile: one, with 12 records.
    const pages = s.stats.recentAnswers.slice(from).filter((a) => a.status === 200 && a.path.includes(`campaign_id=${c.id}&`));
    expect(pages).toHaveLength(1);
    const versions = await m.sql(`SELECT version, request_id FROM result_versions WHERE id = '${id}' ORDER BY version`);
    expect(versions.map((v) => [Number(v.version), v.request_id])).toEqual([
      [1, null],
      [2, pages[0]?.requestId],
    ]);
  });

  it('refuses an --as-of that is not a timestamp in one line, exit 2', async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 12 });
    const m = open(kind);
    await ok(m, s, 'pull');
    for (const bad of ['yesterday', '2026-13-01', '2026-02-30T10:00:00Z']) {
      const r = await m.run(s, 'export', '--table', 'role-results', '--as-of', bad);
      expect(r.code, bad).toBe(2);
      expect(r.stderr.trim().split('\n'), bad).toHaveLength(1);
      expect(r.stderr).toContain(`--as-of: "${bad}" is not a timestamp`);
    }
    const other = await m.run(s, 'export', '--table', 'campaigns', '--as-of', '2026-01-01');
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('only session-results and role-results keep their versions');
    const nobody = await m.run(s, 'history');
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain('give the candidate with --user');
  });
});
