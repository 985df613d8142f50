/** Issue 16: the analysts' views (results, skill_scores, latest_results) against the base tables. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../../src/api/budget.js';
import { ApiClient } from '../../../../src/api/client.js';
import { timeMicros } from '../../../../src/store/model/times.js';
import { SqliteCheckpoints } from '../../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { instantMicros } from '../../../../src/store/sqlite/migrations/v17.js';
import { SqliteSink } from '../../../../src/store/sqlite/sink.js';
import { runPass } from '../../../../src/sync/pass.js';
import { clientConfig, sim, tempDir } from '../../../helpers/index.js';
import { passDefaults } from '../../../helpers/mock.js';

type Row = Record<string, unknown>;

async function mirror(quirkNames?: string) {
  const s = await sim({ campaigns: 4, records: 60, ...(quirkNames ? { quirkNames } : {}) });
  const db = openDatabase(join(tempDir(), 'views.db'));
  const state = new SqliteCheckpoints(db);
  const client = new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
  try {
    await runPass({ client, sink: new SqliteSink(db, state), state }, { ...passDefaults, pageSize: 50 });
  } finally {
    await client.close();
  }
  return db;
}

const byId = (rows: Row[], key: string) => new Map(rows.map((r) => [r[key] as string, r]));

describe('analyst views', () => {
  it('results: one row per session and role result, in one shape', async () => {
    const db = await mirror();
    const rows = byId(db.prepare('SELECT * FROM results').all() as Row[], 'result_id');
    const sessions = db
      .prepare('SELECT s.*, c.name AS cname FROM session_results s JOIN campaigns c ON c.id = s.campaign_id')
      .all() as Row[];
    const roles = db.prepare('SELECT r.*, c.name AS cname FROM role_results r JOIN campaigns c ON c.id = r.campaign_id').all() as Row[];
    expect(sessions.length).toBeGreaterThan(0);
    expect(roles.length).toBeGreaterThan(0);
    expect(rows.size).toBe(sessions.length + roles.length);
    for (const s of sessions) {
      expect(rows.get(s.id as string)).toMatchObject({
        kind: 'session',
        campaign_id: s.campaign_id,
        campaign_name: s.cname,
        candidate_id: s.user_id,
        candidate_email: s.user_email,
        scenario_id: s.scenario_id,
        scenario_name: s.scenario_name,
        score: s.score,
        cefr: s.cefr,
        recommendation: null,
        created_at: s.created_at,
        updated_at: s.updated_at,
        order_index: s.order_index,
      });
    }
    for (const r of roles) {
      expect(rows.get(r.id as string)).toMatchObject({
        kind: 'role',
        campaign_name: r.cname,
        candidate_email: r.user_email,
        score: r.overall_score,
        recommendation: r.recommendation_status,
        order_index: r.order_index,
      });
    }
  });

  it('skill_scores: every eval result once, with the candidate of the result it belongs to', async () => {
    const db = await mirror();
    const total = db.prepare('SELECT count(*) FROM eval_results').pluck().get() as number;
    expect(db.prepare('SELECT count(*) FROM skill_scores').pluck().get()).toBe(total);
    // Per candidate and skill, the view agrees with a join written by hand through parent_type.
    const byHand = db
      .prepare(
        `SELECT coalesce(s.user_email, r.user_email) AS email, e.skill_key, count(*) AS n, sum(e.score) AS total
         FROM eval_results e
         LEFT JOIN session_results s ON e.parent_type = 'session_result' AND s.id = e.parent_id
         LEFT JOIN score_details d ON e.parent_type = 'score_detail' AND d.id = e.parent_id
         LEFT JOIN role_results r ON r.id = d.role_result_id
         GROUP BY 1, 2 ORDER BY 1, 2`,
      )
      .all();
    const view = db
      .prepare(
        'SELECT candidate_email AS email, skill_key, count(*) AS n, sum(score) AS total FROM skill_scores GROUP BY 1, 2 ORDER BY 1, 2',
      )
      .all();
    expect(view).toEqual(byHand);
    const detail = db.prepare("SELECT * FROM skill_scores WHERE kind = 'role' LIMIT 1").get() as Row;
    const d = db.prepare('SELECT * FROM score_details WHERE id = ?').get(detail.score_detail_id) as Row;
    expect(detail).toMatchObject({ result_id: d.role_result_id, scenario_id: d.scenario_id, candidate_email: d.user_email });
  });

  it('latest_results: each candidate latest result per campaign by created_at, then order_index', async () => {
    const db = await mirror();
    const all = db.prepare('SELECT * FROM results').all() as Row[];
    const want = new Map<string, Row>();
    for (const r of all) {
      const key = `${r.campaign_id}|${r.candidate_id ?? r.candidate_email}`;
      const cur = want.get(key);
      const t = Date.parse(r.created_at as string);
      const later =
        !cur ||
        t > Date.parse(cur.created_at as string) ||
        (t === Date.parse(cur.created_at as string) && Number(r.order_index) > Number(cur.order_index));
      if (later) want.set(key, r);
    }
    const got = db.prepare('SELECT * FROM latest_results').all() as Row[];
    expect(got.length).toBe(want.size);
    expect(got.length).toBeLessThan(all.length); // candidates recur, so "latest" picks
    for (const g of got) expect(want.get(`${g.campaign_id}|${g.candidate_id ?? g.candidate_email}`)?.result_id).toBe(g.result_id);
  });

  it('latest_results reads created_at to the microsecond, in every form a time is served in', async () => {
    const db = await mirror('value-forms');
    // The view's instant is the one every export writes (store/model/times.ts), whatever the form.
    const forms = db.prepare('SELECT DISTINCT created_at FROM results').pluck().all() as string[];
    const extra = [
      '2026-03-01t10:00:00.9996z',
      '2026-03-01T10:00+0130',
      '2026-03-01',
      '2026-02-30T10:00:00Z',
      '2026-03-01T24:00:00Z',
      'soon',
      '',
    ];
    const key = db
      .prepare(`SELECT ${instantMicros('x.t')} FROM (SELECT ? AS t) x`)
      .pluck()
      .safeIntegers(true);
    for (const t of [...forms, ...extra]) expect(key.get(t), t).toBe(timeMicros(t));
    expect(forms.some((t) => /[+-]\d\d:?\d\d$/.test(t))).toBe(true);
    // Two results of one candidate a microsecond apart in one millisecond: the later wins over a greater order_index.
    const [a, b] = db
      .prepare(
        'SELECT result_id, kind FROM results WHERE (campaign_id, candidate_id) IN (SELECT campaign_id, candidate_id FROM results GROUP BY 1, 2 HAVING count(*) > 1) ORDER BY campaign_id, candidate_id LIMIT 2',
      )
      .all() as Array<{ result_id: string; kind: string }>;
    if (a === undefined || b === undefined) throw new Error('no candidate with two results');
    const set = (r: { result_id: string; kind: string }, at: string, order: number) =>
      db.prepare(`UPDATE ${r.kind}_results SET created_at = ?, order_index = ? WHERE id = ?`).run(at, order, r.result_id);
    db.prepare('UPDATE session_results SET created_at = NULL').run();
    db.prepare('UPDATE role_results SET created_at = NULL').run();
    set(a, '2026-03-01T12:00:00.123456+02:00', 9_000_000);
    set(b, '2026-03-01T10:00:00.123457', 1);
    const latest = db.prepare('SELECT result_id FROM latest_results WHERE result_id IN (?, ?)').pluck().all(a.result_id, b.result_id);
    expect(latest).toEqual([b.result_id]);
  });

  it('reads both feedback shapes into strengths and growths', async () => {
    for (const quirks of [undefined, 'docs-feedback']) {
      const db = await mirror(quirks);
      const rows = db
        .prepare("SELECT feedback, strengths, growths FROM results WHERE kind = 'session' AND feedback IS NOT NULL AND feedback <> 'null'")
        .all() as Row[];
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) {
        const f = JSON.parse(r.feedback as string);
        const s = JSON.parse(r.strengths as string);
        const g = JSON.parse(r.growths as string);
        if (quirks) {
          expect(s).toEqual(f.key_strengths.map((x: Row) => x.strength));
          expect(g).toEqual(f.areas_for_growths.map((x: Row) => x.improvement_area));
        } else {
          expect(s).toEqual(f.strengths.map((x: Row) => x.description));
          expect(g).toEqual([...f.growths, ...f.improvement_criteria].map((x: Row) => x.description));
        }
        expect(s.length).toBeGreaterThan(0);
      }
      const details = db
        .prepare("SELECT strengths FROM score_detail_feedback WHERE feedback IS NOT NULL AND feedback <> 'null'")
        .pluck()
        .all() as string[];
      expect(details.length).toBeGreaterThan(0);
      for (const d of details) expect(JSON.parse(d).length).toBeGreaterThan(0);
    }
  });
});

describe('analyst indexes', () => {
  const plan = (db: ReturnType<typeof openDatabase>, sql: string) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join('\n');

  it('the per-skill-per-campaign average and the lookup by e-mail use indexes, not scans', () => {
    const db = openDatabase(join(tempDir(), 'plan.db'));
    const avg = plan(db, "SELECT skill_key, avg(score) FROM eval_results WHERE campaign_id = 'c' GROUP BY skill_key");
    expect(avg).toMatch(/USING COVERING INDEX eval_results_campaign_skill/);
    const all = plan(db, 'SELECT campaign_id, skill_key, avg(score) FROM eval_results GROUP BY campaign_id, skill_key');
    expect(all).toMatch(/COVERING INDEX eval_results_campaign_skill/);
    expect(all).not.toMatch(/TEMP B-TREE/);
    const email = plan(db, "SELECT * FROM results WHERE candidate_email = 'a@example.com'");
    expect(email).toMatch(/session_results_email/);
    expect(email).toMatch(/role_results_email/);
    expect(email).not.toMatch(/SCAN (s|r)\b/);
    const skill = plan(db, "SELECT candidate_email, avg(score) FROM skill_scores WHERE skill_key = 'grammar' GROUP BY 1");
    expect(skill).toMatch(/eval_results_skill/);
    expect(plan(db, "SELECT * FROM results WHERE candidate_id = 'u1'")).toMatch(/session_results_user[\s\S]*role_results_user/);
    expect(plan(db, "SELECT * FROM session_results WHERE created_at >= '2026-01-01'")).toMatch(/session_results_created/);
  });
});

describe('declared links (schema 5)', () => {
  it('results link to campaigns and score details to role results; a pulled mirror has no dangling link', async () => {
    const db = await mirror();
    const fks = (t: string) =>
      (db.pragma(`foreign_key_list(${t})`) as Array<{ table: string; from: string; to: string }>).map(
        (f) => `${f.from}->${f.table}.${f.to}`,
      );
    expect(fks('session_results')).toEqual(['campaign_id->campaigns.id']);
    expect(fks('role_results')).toEqual(['campaign_id->campaigns.id']);
    expect(fks('score_details').sort()).toEqual(['campaign_id->campaigns.id', 'role_result_id->role_results.id']);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(0); // declared, not enforced (README)
  });

  it('a version-4 database is rebuilt in place: rows, indexes and raw kept, links and views added', async () => {
    const { Database } = await import('../../../../src/store/sqlite/driver.js');
    const { migrate } = await import('../../../../src/store/sqlite/schema.js');
    const dbPath = join(tempDir(), 'v4.db');
    const old = new Database(dbPath);
    migrate(old, dbPath, 4);
    expect(old.pragma('foreign_key_list(session_results)')).toEqual([]);
    old.exec(`INSERT INTO campaigns (id, name, raw) VALUES ('c1', 'one', '{}');
      INSERT INTO session_results (id, campaign_id, user_email, score, created_at, order_index, raw)
        VALUES ('s1', 'c1', 'a@x', 2.5, '2026-01-01T00:00:00Z', 9007199254740993, '{"id":"s1","order_index":9007199254740993}');
      INSERT INTO role_results (id, campaign_id, user_email, overall_score, order_index, raw) VALUES ('r1', 'c1', 'a@x', 4, 2, '{}');
      INSERT INTO score_details (id, role_result_id, campaign_id, score, raw) VALUES ('d1', 'r1', 'c1', 3, '{}');
      INSERT INTO eval_results (parent_type, parent_id, skill_key, score, campaign_id) VALUES ('score_detail', 'd1', 'grammar', 3, 'c1');`);
    old.close();
    const db = openDatabase(dbPath);
    db.defaultSafeIntegers(true);
    expect(db.prepare('SELECT order_index, raw FROM session_results').get()).toEqual({
      order_index: 9007199254740993n,
      raw: '{"id":"s1","order_index":9007199254740993}',
    });
    db.defaultSafeIntegers(false);
    expect(db.pragma('foreign_key_list(score_details)')).toHaveLength(2);
    expect(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session_results' AND sql IS NOT NULL ORDER BY 1")
        .pluck()
        .all(),
    ).toEqual(['session_results_campaign', 'session_results_created', 'session_results_email', 'session_results_user']);
    expect(db.prepare("SELECT kind, result_id FROM results WHERE candidate_email = 'a@x' ORDER BY 1").all()).toEqual([
      { kind: 'role', result_id: 'r1' },
      { kind: 'session', result_id: 's1' },
    ]);
    expect(db.prepare('SELECT candidate_email, result_id, score_detail_id FROM skill_scores').get()).toEqual({
      candidate_email: 'a@x',
      result_id: 'r1',
      score_detail_id: 'd1',
    });
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v5'").pluck().get()).toBe(0);
  });
});
