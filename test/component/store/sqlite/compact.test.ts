import { statSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../../src/api/budget.js';
import { ApiClient } from '../../../../src/api/client.js';
import { parseJson, toJson } from '../../../../src/core/json.js';
import { SqliteCheckpoints } from '../../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../../src/store/sqlite/db.js';
import { Database } from '../../../../src/store/sqlite/driver.js';
import { SCHEMA_VERSION } from '../../../../src/store/sqlite/schema.js';
import { SqliteSink } from '../../../../src/store/sqlite/sink.js';
import { SqliteUpserts } from '../../../../src/store/sqlite/upserts.js';
import { runPass } from '../../../../src/sync/pass.js';
import { clientConfig, sim, tempDir } from '../../../helpers/index.js';
import { passDefaults } from '../../../helpers/mock.js';
import { checked, evalOf } from '../../../helpers/records.js';
import { runCli } from '../../../helpers/run-cli.js';

const detailOf = (id: string, evals: unknown[] | null, over: Record<string, unknown> = {}) => ({
  id,
  user: { email: 'a@example.org', id: 'u1' },
  scenario: { id: 's1', name: 'Billing', type: { key: 'EMAIL', label: 'Email' } },
  session: { id: `sess-${id}` },
  score: 3.25,
  eval_results: evals,
  feedback: null,
  created_at: '2026-01-01T00:00:00.000',
  updated_at: '2026-01-01T00:00:00.000',
  ...over,
});

const roleOf = (id: string, details: unknown, over: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    campaign: { id: 'c1' },
    user: { id: 'u1', email: 'a@example.org' },
    recommendation_status: 'RECOMMENDED',
    overall_score: 4.1,
    score_details: details,
    additional_scores: { cefr: { score: 'B2' }, nested: { score_details: [] } },
    created_at: '2026-01-01T00:00:00.000',
    updated_at: '2026-01-01T00:00:00.000',
    order_index: 1,
    ...over,
  });

function fullRaw(db: BetterSqlite3.Database, id: string): string {
  return db.prepare('SELECT raw FROM role_results_full WHERE id = ?').pluck().get(id) as string;
}

function storedRaw(db: BetterSqlite3.Database, id: string): string {
  return db.prepare('SELECT raw FROM role_results WHERE id = ?').pluck().get(id) as string;
}

/** `export --table role-results --format ndjson` gives every record's raw as `expected` holds it. */
async function exportsExactly(path: string, expected: Map<string, string>) {
  const exported = await runCli(['export', '--db', path, '--table', 'role-results', '--format', 'ndjson']);
  expect(exported.code, exported.stderr).toBe(0);
  const lines = exported.stdout.trim().split('\n');
  expect(lines).toHaveLength(expected.size);
  for (const line of lines) {
    const row = parseJson(line) as { id: string; raw: unknown };
    expect(toJson(row.raw)).toBe(expected.get(row.id));
  }
}

describe('DETAILED records stored once (schema 6)', () => {
  it("SQLite's json_quote writes every well-formed string as JSON.stringify does (reassembly relies on it)", () => {
    const db = new Database(':memory:');
    const quote = db.prepare('SELECT json_quote(?)').pluck();
    const differ: number[] = [];
    for (let c = 0; c < 0x10000; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const s = `a${String.fromCharCode(c)}b`;
      if (quote.get(s) !== JSON.stringify(s)) differ.push(c);
    }
    for (const s of ['😀 emoji', '\u2028\u2029', 'x\u0000y', '"\\/']) if (quote.get(s) !== JSON.stringify(s)) differ.push(-1);
    expect(differ).toEqual([]);
    db.close();
  });

  it('hostile shapes come back byte for byte; only what can be rebuilt is taken out', () => {
    const db = openDatabase(join(tempDir(), 'h.db'));
    const mirror = new SqliteUpserts(db);
    const texts: Record<string, string> = {
      plain: roleOf('plain', [detailOf('d1', [evalOf(1), evalOf(2)]), detailOf('d2', [evalOf(3)])]),
      hostile: roleOf('hostile', [
        detailOf('d3', [
          evalOf(4, { rationale: 'nul \u0000 tab \t line\u2028sep "quoted" \\ 😀 é\u007f', skill: { key: 'K', label: null } }),
        ]),
      ]),
      // Each of these keeps its eval results in its detail's raw.
      oddEvals: roleOf('oddEvals', [
        detailOf('d4', [evalOf(5, { extra: true })]),
        detailOf('d5', [evalOf(6, { score: 6.5 })]),
        detailOf('d6', [{ skill: { key: 'K', label: 'L' }, score: '1', rationale: 'r', evaluated_at: 't', evaluation_id: 'e' }]),
        detailOf('d7', [evalOf(7, { rationale: 'lone \ud800 surrogate' })]),
        detailOf('d8', [evalOf(8), 'not an object']),
        detailOf('d9', []),
        detailOf('d10', null),
      ]),
      // These keep their whole score details in the record's raw.
      noId: roleOf('noId', [detailOf('d11', [evalOf(9)]), { score: 1 }]),
      dupId: roleOf('dupId', [detailOf('d12', [evalOf(10)]), detailOf('d12', [evalOf(11)])]),
      empty: roleOf('empty', []),
      notArray: roleOf('notArray', { id: 'x' }),
      bigInts: roleOf('bigInts', [detailOf('d13', [evalOf(12)], { score: 1e21 })]).replace(
        '"order_index":1',
        '"order_index":12345678901234567890123',
      ),
    };
    const records = Object.values(texts).map(checked);
    db.transaction(() => mirror.upsertRoleResults(records, 'c1', 'DETAILED'))();
    for (const r of records) expect(fullRaw(db, r.id), r.id).toBe(r.raw);
    expect(fullRaw(db, 'bigInts')).toContain('12345678901234567890123');
    expect(storedRaw(db, 'plain')).toContain('"score_details":[],');
    expect(storedRaw(db, 'plain')).not.toContain('d1');
    expect(storedRaw(db, 'hostile')).not.toContain('nul');
    expect(storedRaw(db, 'noId')).toContain('"d11"');
    expect(storedRaw(db, 'dupId')).toContain('"d12"');
    const detailRaw = (id: string) => db.prepare('SELECT raw FROM score_details WHERE id = ?').pluck().get(id) as string;
    expect(detailRaw('d1')).toContain('"eval_results":[],');
    for (const id of ['d4', 'd5', 'd6', 'd7', 'd8'])
      expect(detailRaw(id), id).toMatch(/"eval_results":\[\{|"eval_results":\[".*|"not an object"/);
    const details = db.prepare('SELECT id, raw FROM score_details_full').all() as Array<{ id: string; raw: string }>;
    const served = new Map<string, string>();
    for (const r of records) {
      const list = r.record.score_details;
      // A repeated detail id keeps its first entry.
      if (Array.isArray(list))
        for (const d of list)
          if (d !== null && typeof d === 'object' && 'id' in d && !served.has(String(d.id))) served.set(String(d.id), toJson(d));
    }
    for (const d of details) expect(d.raw, d.id).toBe(served.get(d.id));
    db.close();
  });

  it('a detail id another result holds stays with it, and the newcomer keeps its whole raw', () => {
    const db = openDatabase(join(tempDir(), 'c.db'));
    const mirror = new SqliteUpserts(db);
    const first = checked(roleOf('first', [detailOf('shared', [evalOf(1)])]));
    const second = checked(roleOf('second', [detailOf('shared', [evalOf(2)]), detailOf('own', [evalOf(3)])]));
    db.transaction(() => mirror.upsertRoleResults([first, second], 'c1', 'DETAILED'))();
    expect(fullRaw(db, 'first')).toBe(first.raw);
    expect(fullRaw(db, 'second')).toBe(second.raw);
    expect(db.prepare("SELECT role_result_id FROM score_details WHERE id = 'shared'").pluck().get()).toBe('first');
    db.close();
  });

  it('a record read again counts as updated only when its full text changed, details and eval results included', () => {
    const db = openDatabase(join(tempDir(), 'u.db'));
    const mirror = new SqliteUpserts(db);
    const upsert = (text: string) => db.transaction(() => mirror.upsertRoleResults([checked(text)], 'c1', 'DETAILED'))();
    const base = [detailOf('d1', [evalOf(1), evalOf(2)]), detailOf('d2', [evalOf(3)])];
    expect(upsert(roleOf('r', base))).toEqual({ inserted: 1, updated: 0 });
    expect(upsert(roleOf('r', base))).toEqual({ inserted: 0, updated: 0 });
    const rescored = [detailOf('d1', [evalOf(1), evalOf(2, { rationale: 'changed' })]), detailOf('d2', [evalOf(3)])];
    expect(upsert(roleOf('r', rescored))).toEqual({ inserted: 0, updated: 1 });
    expect(fullRaw(db, 'r')).toBe(checked(roleOf('r', rescored)).raw);
    const reordered = [detailOf('d2', [evalOf(3)]), detailOf('d1', [evalOf(1), evalOf(2, { rationale: 'changed' })])];
    expect(upsert(roleOf('r', reordered))).toEqual({ inserted: 0, updated: 1 });
    expect(fullRaw(db, 'r')).toBe(checked(roleOf('r', reordered)).raw);
    expect(db.prepare('SELECT count(*) FROM eval_results').pluck().get()).toBe(3);
    // Read as OVERALL (no score_details): the record is replaced, its details stay for analysts.
    const overall = JSON.stringify({ id: 'r', campaign: { id: 'c1' }, overall_score: 2, order_index: 1 });
    expect(db.transaction(() => mirror.upsertRoleResults([checked(overall)], 'c1', 'OVERALL'))()).toEqual({ inserted: 0, updated: 1 });
    expect(fullRaw(db, 'r')).toBe(checked(overall).raw);
    expect(db.prepare('SELECT count(*) FROM score_details').pluck().get()).toBe(2);
    db.close();
  });

  // A pull from the simulator, stored once and rebuilt as served, on every kind: test/contract/compact.test.ts.

  it('migrates a version-5 DETAILED mirror in place: every raw the same, the file at least 30% smaller', async () => {
    const s = await sim({ campaigns: 2, records: 400 });
    const path = join(tempDir(), 'v5.db');
    const db = openDatabase(path);
    const state = new SqliteCheckpoints(db);
    const client = new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
    await runPass({ client, sink: new SqliteSink(db, state), state }, { ...passDefaults, type: 'role' });
    await client.close();
    await s.close();
    const before = new Map(
      (db.prepare('SELECT id, raw FROM role_results_full').all() as Array<{ id: string; raw: string }>).map((r) => [r.id, r.raw]),
    );
    // What release 5 wrote: whole texts everywhere, no positions, no _full views.
    db.exec(`
      DROP TABLE drift_seen; DROP TABLE quarantine;
      DROP VIEW result_versions; DROP TRIGGER session_results_version; DROP TRIGGER session_results_pruned;
      DROP TRIGGER role_results_version; DROP TRIGGER role_results_pruned; DROP TABLE past_versions; DROP TABLE change_times;
      UPDATE score_details SET raw = (SELECT f.raw FROM score_details_full f WHERE f.id = score_details.id);
      UPDATE role_results SET raw = (SELECT f.raw FROM role_results_full f WHERE f.id = role_results.id);
      DROP VIEW role_results_full; DROP VIEW score_details_full;
      ALTER TABLE score_details DROP COLUMN position; ALTER TABLE eval_results DROP COLUMN position;
      DROP TABLE id_conflicts;
      ALTER TABLE session_results DROP COLUMN change_seq; ALTER TABLE role_results DROP COLUMN change_seq;
      DROP TABLE change_counter; DROP TABLE tombstones; DROP TABLE export_consumers;
      PRAGMA user_version = 5;
      VACUUM;`);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const v5Bytes = statSync(path).size;
    // Export reads a version-5 file as it is (read-only: no migration) and gives the same records.
    await exportsExactly(path, before);
    const upgraded = openDatabase(path);
    upgraded.pragma('wal_checkpoint(TRUNCATE)');
    expect(upgraded.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    const after = upgraded.prepare('SELECT id, raw FROM role_results_full').all() as Array<{ id: string; raw: string }>;
    expect(after).toHaveLength(before.size);
    for (const r of after) expect(r.raw).toBe(before.get(r.id));
    expect(upgraded.pragma('integrity_check', { simple: true })).toBe('ok');
    upgraded.close();
    const v6Bytes = statSync(path).size;
    await exportsExactly(path, before);
    expect(v6Bytes / v5Bytes).toBeLessThanOrEqual(0.7);
  });
});
