/**
 * The audit trail of results beyond its contract case (test/contract/audit.test.ts keeps the versions,
 * `export --as-of`, `history` and `forget` across every kind), on SQLite and PostgreSQL alike (the
 * file's name makes a focused run start the PostgreSQL server): an upgraded mirror starts its
 * versions at the upgrade, a bad --as-of is a usage error, and the simulator's control routes.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { FIRST_V9, PG_FIRST_TRAIL, SQLITE_FIRST_TRAIL } from '../helpers/first-versions.js';
import { sim, tempDir } from '../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../helpers/pg.js';
import { runCli } from '../helpers/run-cli.js';

type Rows = Array<Record<string, unknown>>;

interface Backend {
  name: string;
  describe: (name: string, fn: () => void) => void;
  /** The mirror's flags and environment for a command. */
  args(): { flags: string[]; env: Record<string, string> };
  rows(sql: string): Promise<Rows>;
  /** Turns the mirror back into one the release before versions wrote. */
  downgrade(): Promise<void>;
  /** Turns the mirror into one upgraded (to 11) by a build whose versions kept no request id. */
  firstTrail(): Promise<void>;
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
    async firstTrail() {
      const db = new Database(path);
      try {
        db.exec(SQLITE_FIRST_TRAIL);
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
    async firstTrail() {
      await pgRows(schema, PG_FIRST_TRAIL);
    },
  };
}

async function change(s: RunningSimulator, id: string, what: 'rescore' | 'delete'): Promise<void> {
  const r = await fetch(`${s.url}/_simulator/results/${id}/${what}`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}` } });
  expect(r.status, await r.text()).toBe(200);
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
    const versionsOf = (id: string) =>
      b.rows(`SELECT version, deleted, valid_from, valid_to FROM result_versions WHERE id = '${id}' ORDER BY version`);

    beforeAll(async () => {
      s = await sim({ campaigns: 2, records: 12 });
    });
    afterAll(async () => {
      await s?.close();
    });

    it('an upgraded mirror holds its current rows as version 1, from the upgrade on', async () => {
      await ok(['pull']);
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

    it("a mirror whose versions kept no request id takes pulls again once upgraded: versions from then on keep their page's, older ones NULL", async () => {
      expect(FIRST_V9).not.toContain('request_id FROM');
      expect(PG_FIRST_TRAIL).not.toContain('request_id FROM');
      const c = s.data.campaigns.find((x) => x.type === 'SESSION_COMPLETION');
      if (!c) throw new Error('no session campaign');
      const id = s.data.sessionResult(c, 2).id as string;
      await ok(['pull']);
      await b.firstTrail();
      await change(s, id, 'rescore');
      const from = s.stats.recentAnswers.length;
      await ok(['reconcile']);
      // The pages of this record's stream the simulator answered during the reconcile: one, with 12 records.
      const pages = s.stats.recentAnswers.slice(from).filter((a) => a.status === 200 && a.path.includes(`campaign_id=${c.id}&`));
      expect(pages).toHaveLength(1);
      const versions = await b.rows(`SELECT version, request_id FROM result_versions WHERE id = '${id}' ORDER BY version`);
      expect(versions.map((v) => [Number(v.version), v.request_id])).toEqual([
        [1, null],
        [2, pages[0]?.requestId],
      ]);
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
