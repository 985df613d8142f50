/**
 * kill -9 while pages with quarantined records are written: every page of the pull holds one, and the
 * pull is killed after some have committed and while later ones are under way. A pull run to its end
 * afterwards leaves every good record stored once and every bad one quarantined once, with the
 * stream's count and checkpoint in step: the quarantine commits with its page or not at all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../../src/store/sqlite/driver.js';
import { cli, sim, startCli, tempDir } from '../../../helpers/index.js';
import { freshSchema, PG_URL, pgRows } from '../../../helpers/pg.js';

const RECORDS = 600;
const EVERY = 10;
const KILLS = Number(process.env.CRASH_KILLS ?? 2);

interface Case {
  name: string;
  make(): {
    args: string[];
    env: Record<string, string>;
    rows(sql: string): Promise<Array<Record<string, unknown>>>;
    /** The ids stored, one entry per stored copy (rows, or NDJSON lines). */
    stored(): Promise<string[]>;
  };
}

const sqlite = (db: string) => async (sql: string) => {
  const d = new Database(db, { readonly: true });
  try {
    return d.prepare(sql).all() as Array<Record<string, unknown>>;
  } finally {
    d.close();
  }
};

const CASES: Case[] = [
  {
    name: 'SQLite',
    make() {
      const db = join(tempDir(), 'm.db');
      const rows = sqlite(db);
      return {
        args: ['--db', db],
        env: {},
        rows,
        stored: async () => (await rows('SELECT id FROM session_results')).map((r) => r.id as string),
      };
    },
  },
  {
    name: 'NDJSON',
    make() {
      const dir = tempDir();
      const out = join(dir, 'out');
      const rows = sqlite(join(dir, 'state.db'));
      const stored = async () =>
        readFileSync(join(out, 'session_results.ndjson'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { id: string }).id);
      return { args: ['--db', join(dir, 'state.db'), '--format', 'ndjson', '--out', out], env: {}, rows, stored };
    },
  },
];
if (PG_URL || process.env.CI === 'true') {
  CASES.push({
    name: 'PostgreSQL',
    make() {
      if (!PG_URL) throw new Error(`no PostgreSQL server for the tests: ${process.env.CAMPAIGN_SYNC_TEST_PG_ERROR ?? 'not set'}`);
      const schema = freshSchema();
      const rows = (sql: string) => pgRows(schema, sql);
      return {
        args: ['--pg-schema', schema],
        env: { CAMPAIGN_SYNC_DB: PG_URL },
        rows,
        stored: async () => (await rows('SELECT id FROM session_results')).map((r) => r.id as string),
      };
    },
  });
}

describe.each(CASES)('quarantine under kill -9: $name', (c) => {
  it(`${KILLS} kills during quarantined pages, then every record stored or quarantined exactly once`, async () => {
    // One record in ten malformed, every kind in turn: each page of ten holds one. Slow replies
    // stretch the pull so that the kills land between pages' commits.
    const s = await sim({
      campaigns: 1,
      records: RECORDS,
      malformed: { every: EVERY, kinds: ['id', 'score', 'campaign', 'order-index'] },
      faults: { slow: 1 },
      slowMs: 20,
    });
    const campaign = s.data.campaigns[0];
    if (campaign?.type !== 'SESSION_COMPLETION') throw new Error('the first campaign is a session campaign');
    const m = c.make();
    const args = ['pull', '--base-url', s.url, ...m.args, '--page-size', String(EVERY)];
    // The request log counts the pages read (the quarantine's warning comes once, at the stream's end).
    const logged = [...args, '--verbose'];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, ...m.env } };
    let killed = 0;
    for (let round = 0; round < KILLS; round++) {
      const run = startCli(logged, env);
      // Killed after a few pages of this run (one quarantined record each) were read: some committed, one under way.
      const pages = 8 + round * 7;
      await run.waitFor(new RegExp(`(GET /v1/campaigns/session/results\\?\\S* 200 [^]*){${pages}}`), 60_000).catch(() => {});
      run.child.kill('SIGKILL');
      const { signal } = await run.exited;
      if (signal === 'SIGKILL') killed++;
    }
    expect(killed).toBeGreaterThan(0);
    const last = await cli(args, env);
    expect(last.code, last.stderr).toBe(0);

    const malformed = RECORDS / EVERY;
    const stored = await m.stored();
    expect(stored.length).toBe(RECORDS - malformed);
    expect(new Set(stored).size).toBe(stored.length);
    const held = await m.rows('SELECT record_id, raw FROM quarantine');
    expect(held.length).toBe(malformed);
    expect(new Set(held.map((r) => r.raw)).size).toBe(malformed);
    // The ones with an id are exactly the malformed ones, never a stored one.
    const good = new Set(stored);
    for (const r of held) if (r.record_id !== null) expect(good.has(r.record_id as string)).toBe(false);
    const state = await m.rows('SELECT cursor, records FROM sync_state');
    expect(String(state[0]?.cursor)).toBe(String(s.data.orderIndex(campaign, RECORDS - 1)));
    expect(Number(state[0]?.records)).toBe(RECORDS - malformed);
  });
});
