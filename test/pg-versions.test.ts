/**
 * The audit trail of results, on SQLite and PostgreSQL alike (the file's name makes a focused run
 * start the PostgreSQL server): every change of a result keeps its previous version
 * (result_versions), `export --as-of` gives the mirror as it stood at a time, `history` lists a
 * person's versions, an unchanged re-read adds nothing, and `forget` erases the person's versions.
 * The simulator's control routes re-score and delete one record, as a user rehearsing would.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../src/simulator/server.js';
import { Database } from '../src/store/sqlite.js';
import { sim, tempDir } from './helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from './helpers/pg.js';
import { runCli } from './helpers/run-cli.js';

type Rows = Array<Record<string, unknown>>;

interface Backend {
  name: string;
  describe: (name: string, fn: () => void) => void;
  /** The mirror's flags and environment for a command. */
  args(): { flags: string[]; env: Record<string, string> };
  rows(sql: string): Promise<Rows>;
  /** Turns the mirror back into one the release before versions wrote. */
  downgrade(): Promise<void>;
}

const DROP_TRAIL = {
  // The steps after it too (the quarantine, drift), so that the upgrade runs them again.
  sqlite: `DROP TABLE IF EXISTS drift_seen; DROP TABLE IF EXISTS quarantine; DROP VIEW result_versions; DROP TRIGGER session_results_version; DROP TRIGGER session_results_pruned;
    DROP TRIGGER role_results_version; DROP TRIGGER role_results_pruned; DROP TABLE past_versions; DROP TABLE change_times;`,
  pg: `DROP TABLE IF EXISTS drift_seen; DROP TABLE IF EXISTS quarantine; DROP VIEW result_versions CASCADE; DROP TRIGGER session_results_version ON session_results; DROP TRIGGER role_results_version ON role_results;
    DROP TRIGGER session_results_pruned ON tombstones; DROP TRIGGER role_results_pruned ON tombstones; DROP TABLE past_versions, change_times;`,
};

function sqliteBackend(): Backend {
  let path = '';
  return {
    name: 'SQLite',
    describe,
    args() {
      path ||= `${tempDir()}/mirror.db`;
      return { flags: ['--db', path], env: {} };
    },
    async rows(sql) {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare(sql).all() as Rows;
      } finally {
        db.close();
      }
    },
    async downgrade() {
      const db = new Database(path);
      try {
        db.exec(DROP_TRAIL.sqlite);
        // The version before result_versions (SQLite v9): the later migrations run again, and may.
        db.pragma('user_version = 8');
      } finally {
        db.close();
      }
    },
  };
}

function pgBackend(): Backend {
  let schema = '';
  return {
    name: 'PostgreSQL',
    describe: describePg,
    args() {
      schema ||= freshSchema();
      return { flags: ['--pg-schema', schema], env: { CAMPAIGN_SYNC_DB: PG_URL } };
    },
    rows: (sql) => pgRows(schema, sql),
    async downgrade() {
      await pgRows(schema, `${DROP_TRAIL.pg} UPDATE meta SET value = '6' WHERE key = 'schema_version'`);
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function change(s: RunningSimulator, id: string, what: 'rescore' | 'delete'): Promise<void> {
  const r = await fetch(`${s.url}/_simulator/results/${id}/${what}`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}` } });
  expect(r.status, await r.text()).toBe(200);
}

/** NDJSON lines by id, each line's `raw` (export embeds it as a JSON value). */
function rawById(stdout: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const line of stdout.split('\n').filter((l) => l !== '')) {
    const row = JSON.parse(line) as { id: string; raw: unknown };
    out.set(row.id, row.raw);
  }
  return out;
}

for (const make of [sqliteBackend, pgBackend]) {
  const b = make();
  b.describe(`result versions (${b.name})`, () => {
    let s: RunningSimulator;
    const run = (args: string[]) => {
      const { flags, env } = b.args();
      return runCli([...args, ...flags], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url, ...env } });
    };
    const ok = async (args: string[]) => {
      const r = await run(args);
      expect(
        r.stderr.split('\n').filter((l) => /error/i.test(l)),
        args.join(' '),
      ).toEqual([]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r;
    };
    /** Both result tables as the mirror holds them now, by table then id. */
    const snapshot = async () => ({
      role: rawById((await ok(['export', '--table', 'role-results', '--format', 'ndjson'])).stdout),
      session: rawById((await ok(['export', '--table', 'session-results', '--format', 'ndjson'])).stdout),
    });
    const asOf = async (at: string) => ({
      role: rawById((await ok(['export', '--table', 'role-results', '--format', 'ndjson', '--as-of', at])).stdout),
      session: rawById((await ok(['export', '--table', 'session-results', '--format', 'ndjson', '--as-of', at])).stdout),
    });
    /** A moment strictly after everything committed so far and strictly before anything later. */
    const moment = async () => {
      await sleep(5);
      const at = new Date().toISOString();
      await sleep(5);
      return at;
    };
    const versionsOf = (id: string) =>
      b.rows(`SELECT version, deleted, valid_from, valid_to FROM result_versions WHERE id = '${id}' ORDER BY version`);

    beforeAll(async () => {
      s = await sim({ campaigns: 2, records: 12 });
    });
    afterAll(async () => {
      await s?.close();
    });

    it('keeps every version, gives the mirror as of each moment, lists a person, and forgets them', async () => {
      const roleCampaign = s.data.campaigns.find((c) => c.type === 'ROLE_SUBMISSION');
      const sessionCampaign = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
      if (!roleCampaign || !sessionCampaign) throw new Error('the simulator serves one campaign of each type');
      const rescored = s.data.roleResult(roleCampaign, 3, 'DETAILED');
      const deleted = s.data.sessionResult(sessionCampaign, 5);
      const user = rescored.user as { email: string; id: string };

      await ok(['pull']);
      const t0 = await moment();
      const at0 = await snapshot();
      await change(s, rescored.id as string, 'rescore');
      await ok(['pull', '--full']);
      const t1 = await moment();
      const at1 = await snapshot();
      await change(s, rescored.id as string, 'rescore');
      await ok(['reconcile']);
      const t2 = await moment();
      const at2 = await snapshot();
      await change(s, deleted.id as string, 'delete');
      await ok(['reconcile', '--prune']);
      const t3 = await moment();
      const at3 = await snapshot();

      // The service's changes reached the mirror: three scores of one record, one record gone.
      const score = (at: typeof at0) => (at.role.get(rescored.id as string) as { overall_score: number }).overall_score;
      expect(new Set([score(at0), score(at1), score(at2)]).size).toBe(3);
      expect(at2.session.has(deleted.id as string)).toBe(true);
      expect(at3.session.has(deleted.id as string)).toBe(false);

      const a = await versionsOf(rescored.id as string);
      expect(a.map((v) => Number(v.version))).toEqual([1, 2, 3]);
      expect(a.map((v) => v.valid_to === null)).toEqual([false, false, true]);
      const d = await versionsOf(deleted.id as string);
      expect(d.map((v) => [Number(v.version), Boolean(Number(v.deleted))])).toEqual([
        [1, false],
        [2, true],
      ]);
      // Each version ends where the next begins.
      for (const vs of [a, d]) for (let i = 1; i < vs.length; i++) expect(String(vs[i - 1]?.valid_to)).toBe(String(vs[i]?.valid_from));

      for (const [at, then] of [
        [t0, at0],
        [t1, at1],
        [t2, at2],
        [t3, at3],
      ] as const) {
        expect(await asOf(at), at).toEqual(then);
      }
      // Before the first pull the mirror held nothing; a time to come is now.
      const before = await asOf('2000-01-01');
      expect(before.role.size + before.session.size).toBe(0);
      expect(await asOf('2999-01-01T00:00:00Z')).toEqual(at3);

      // An unchanged re-read adds no version.
      const count = async () => (await b.rows('SELECT count(*) AS n FROM result_versions'))[0]?.n;
      const past = await b.rows('SELECT count(*) AS n FROM past_versions');
      const n = await count();
      await ok(['reconcile']);
      await ok(['pull', '--full']);
      expect(await count()).toBe(n);
      expect(await b.rows('SELECT count(*) AS n FROM past_versions')).toEqual(past);

      const h = JSON.parse((await ok(['history', '--user', user.email.toUpperCase(), '--json'])).stdout) as {
        versions: Array<{ record_id: string; version: number; score: number; valid_from: string; deleted: boolean }>;
      };
      const mine = h.versions.filter((v) => v.record_id === rescored.id);
      expect(mine.map((v) => v.version)).toEqual([1, 2, 3]);
      expect(mine.map((v) => v.score)).toEqual([score(at0), score(at1), score(at2)]);
      expect(h.versions.every((v) => v.valid_from <= t3)).toBe(true);
      const text = await ok(['history', '--user', user.id]);
      expect(text.stdout).toContain(String(score(at1)));
      const gone = JSON.parse((await ok(['history', '--record', deleted.id as string, '--json'])).stdout) as {
        versions: Array<{ version: number; deleted: boolean }>;
      };
      expect(gone.versions.map((v) => [v.version, v.deleted])).toEqual([
        [1, false],
        [2, true],
      ]);

      // forget erases the person's versions with their rows; their deleted record's versions too.
      const deletedUser = (deleted.user as { id: string }).id;
      await ok(['forget', '--user', user.email]);
      await ok(['forget', '--user', deletedUser]);
      expect(await versionsOf(rescored.id as string)).toEqual([]);
      expect(await versionsOf(deleted.id as string)).toEqual([]);
      const after = await run(['history', '--user', user.email]);
      expect(after.code).toBe(2);
    });

    it('an upgraded mirror holds its current rows as version 1, from the upgrade on', async () => {
      await b.downgrade();
      const before = new Date().toISOString();
      await ok(['pull']);
      const after = new Date().toISOString();
      const all = await b.rows('SELECT version, valid_from, valid_to FROM result_versions');
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
      await ok(['reconcile']);
      expect((await versionsOf(id)).map((v) => Number(v.version))).toEqual([1, 2]);
    });

    it('refuses an --as-of that is not a timestamp in one line, exit 2', async () => {
      for (const bad of ['yesterday', '2026-13-01', '2026-02-30T10:00:00Z']) {
        const r = await run(['export', '--table', 'role-results', '--as-of', bad]);
        expect(r.code, bad).toBe(2);
        expect(r.stderr.trim().split('\n'), bad).toHaveLength(1);
        expect(r.stderr).toContain(`--as-of: "${bad}" is not a timestamp`);
      }
      const other = await run(['export', '--table', 'campaigns', '--as-of', '2026-01-01']);
      expect(other.code).toBe(2);
      expect(other.stderr).toContain('only session-results and role-results keep their versions');
      const nobody = await run(['history']);
      expect(nobody.code).toBe(2);
      expect(nobody.stderr).toContain('give the candidate with --user');
    });
  });
}

describe('the simulator control routes', () => {
  it('need the key, know only served records, and take POST', async () => {
    const s = await sim({ campaigns: 2, records: 3 });
    try {
      const url = `${s.url}/_simulator/results/nope/rescore`;
      expect((await fetch(url, { method: 'POST' })).status).toBe(401);
      const auth = { authorization: `Bearer ${s.apiKey}` };
      expect((await fetch(url, { method: 'POST', headers: auth })).status).toBe(404);
      const c = s.data.campaigns[0];
      if (!c) throw new Error('no campaign');
      const id = (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, 1) : s.data.roleResult(c, 1, 'OVERALL')).id as string;
      expect((await fetch(`${s.url}/_simulator/results/${id}/delete`, { headers: auth })).status).toBe(405);
      const r = await fetch(`${s.url}/_simulator/results/${id}/delete`, { method: 'POST', headers: auth });
      expect(await r.json()).toMatchObject({ id, campaign_id: c.id, index: 1, change: 'delete' });
      expect(s.changes.any).toBe(true);
    } finally {
      await s.close();
    }
  });
});
