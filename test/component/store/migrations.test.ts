/**
 * Migrations are frozen (store/sqlite/migrations/, store/pg/migrations/): a step imports only core/,
 * never the write path nor another step, an old database comes up equal to one a pull of today
 * writes, and the views they made are still what today's code rebuilds (a change there needs a new
 * migration).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { COLUMNS } from '../../../src/store/model/rows.js';
import { detailRawPg, roleRawPg } from '../../../src/store/pg/compact.js';
import { PG_MIGRATIONS } from '../../../src/store/pg/migrations/index.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { Database } from '../../../src/store/sqlite/driver.js';
import { MIGRATIONS } from '../../../src/store/sqlite/migrations/index.js';
import { detailRawSql, roleRawSql } from '../../../src/store/sqlite/reassemble.js';
import { columnNames, migrate, SCHEMA_VERSION } from '../../../src/store/sqlite/schema.js';
import { SqliteUpserts } from '../../../src/store/sqlite/upserts.js';
import { FIRST_V9 } from '../../helpers/first-versions.js';
import { cli, servedRecords, sim, tempDir } from '../../helpers/index.js';
import { checked, evalOf } from '../../helpers/records.js';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
const FOLDERS = ['store/sqlite/migrations', 'store/pg/migrations'];

/** The import specifiers of a file: static, type-only, re-exports and dynamic. */
function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/g)) found.push(m[1] as string);
  for (const m of text.matchAll(/(?:^|\n)\s*import\s+'([^']+)'/g)) found.push(m[1] as string);
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) found.push(m[1] as string);
  return found;
}

/** Every file of src/ a file reaches through relative imports, itself included (paths relative to src/). */
function reach(start: string): Set<string> {
  const seen = new Set<string>();
  const todo = [start];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    const rel = relative(SRC, file);
    if (seen.has(rel)) continue;
    seen.add(rel);
    for (const spec of importsOf(file)) if (spec.startsWith('.')) todo.push(resolve(file, '..', spec.replace(/\.js$/, '.ts')));
  }
  return seen;
}

const migrationFiles = () => FOLDERS.flatMap((f) => readdirSync(join(SRC, f)).map((name) => join(SRC, f, name)));

describe('migration files are frozen code', () => {
  it('import only core/ (and driver types); only index.ts imports the steps of its folder', () => {
    const files = migrationFiles();
    expect(files.length).toBeGreaterThanOrEqual(FOLDERS.length * 2);
    const bad: string[] = [];
    for (const file of files) {
      // A step that read another step's text would change with it: each step is frozen on its own.
      const own = basename(file) === 'index.ts' ? relative(SRC, join(file, '..')) : undefined;
      for (const spec of importsOf(file)) {
        if (!spec.startsWith('.')) {
          // A driver's types only: `import type X from 'better-sqlite3'` is erased from the build.
          const typeOnly = new RegExp(`import\\s+type\\s[^;]*from\\s+'${spec}'`).test(readFileSync(file, 'utf8'));
          if (!typeOnly || !['better-sqlite3', 'pg'].includes(spec)) bad.push(`${relative(SRC, file)} imports ${spec}`);
          continue;
        }
        const target = relative(SRC, resolve(file, '..', spec));
        if (!target.startsWith('core/') && relative(SRC, join(SRC, target, '..')) !== own)
          bad.push(`${relative(SRC, file)} imports ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('reach neither store/sqlite/upserts.ts, store/model/rows.ts, store/model/compact.ts nor store/sqlite/, even through other files', () => {
    const reached = new Set(migrationFiles().flatMap((f) => [...reach(f)]));
    const writePath = [...reached].filter((f) => f.startsWith('store/') && !FOLDERS.some((folder) => f.startsWith(`${folder}/`)));
    expect(writePath).toEqual([]);
    // The check follows imports: a file of the write path reaches rows.ts.
    expect(reach(join(SRC, 'store/sqlite/upserts.ts')).has('store/model/rows.ts')).toBe(true);
  });

  it("the SQLite views a fresh mirror holds are what today's reassembly rebuilds (else: a new migration)", () => {
    const db = openDatabase(join(tempDir(), 'v.db'));
    const full = (table: 'role_results' | 'score_details', alias: string, raw: string) =>
      `CREATE VIEW ${table}_full AS SELECT ${alias}.id, ${COLUMNS[table].map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`)).join(', ')} FROM ${table} ${alias}`;
    const stored = (name: string) => db.prepare("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = ?").pluck().get(name);
    expect(stored('role_results_full')).toBe(full('role_results', 'r', roleRawSql('r')));
    expect(stored('score_details_full')).toBe(full('score_details', 'd', detailRawSql('d')));
    db.close();
  });

  it("the PostgreSQL views the last migration made are what today's rebuild gives (else: a new migration)", () => {
    const all = PG_MIGRATIONS.join('\n');
    const last = (name: string) => {
      const at = all.lastIndexOf(`CREATE OR REPLACE VIEW ${name} AS`);
      return all.slice(at, all.indexOf(';\n', at) + 1);
    };
    const full = (table: 'role_results' | 'score_details', alias: string, raw: string) =>
      `CREATE OR REPLACE VIEW ${table}_full AS SELECT ${alias}.id, ${COLUMNS[table].map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`)).join(', ')} FROM ${table} ${alias};`;
    expect(last('role_results_full')).toBe(full('role_results', 'r', roleRawPg('r')));
    expect(last('score_details_full')).toBe(full('score_details', 'd', detailRawPg('d')));
  });

  it('run the SQL each step shipped with (a change to the schema is a new step)', () => {
    // The first 16 hex digits of each step's SHA-256, in order; a step is listed once it reached main.
    // SQLite's steps 6, 12 and 13 also run a function, which this does not cover.
    const SHIPPED = {
      sqlite: [
        'a547dc03ceb70358',
        '5257b480364b8be8',
        '9357e768f1ceb5a5',
        'b59b2d2567fa89dd',
        '9166192f1a00af32',
        '7eb7362e65c9a31f',
        '0744e0e60977d360',
        '66b95f5d2cc2e126',
        '85aeaf49c4048624',
        '6cb250c108759500',
        'cbb8b9c90e0fbe43',
        '8bd521c69f4b2942',
        'e297967ee6684a45',
        'e3b0c44298fc1c14',
        '8e4bec14cea44960',
        'e3b0c44298fc1c14',
        'e40b78433060caee',
      ],
      pg: [
        '98d7cb630c5567fc',
        '1774dcd3fbd16f9d',
        '2b1864d3c60779e6',
        '326bb34ae53c545e',
        '7e195068de63e69d',
        'e94c8dabacf174a2',
        '93f25ac0f32e362e',
        '99225c7a1612cfe3',
        '84fcdb9385305c0b',
        '19dd8ed77c21d01b',
        'c9c77b251cab8ed7',
        '2b1f10fbea643b29',
        '9a07958053610b71',
        '9db6b8844dc12858',
        'ff06cb439c6da4b1',
        'd1783b7041f457f2',
        '950f951847a19856',
        '83710ebf936072ec',
        'f51fece07a1d8f38',
      ],
    };
    const digest = (sql: string) => createHash('sha256').update(sql).digest('hex').slice(0, 16);
    const now = { sqlite: MIGRATIONS.map((m) => digest(m.sql)), pg: PG_MIGRATIONS.map(digest) };
    expect({ sqlite: now.sqlite.slice(0, SHIPPED.sqlite.length), pg: now.pg.slice(0, SHIPPED.pg.length) }).toEqual(SHIPPED);
  });
});

const detailOf = (id: string, evals: unknown, over: Record<string, unknown> = {}) => ({
  id,
  user: { email: 'h@example.org', id: 'uh' },
  scenario: { id: 's1', name: 'Billing', type: { key: 'EMAIL', label: 'Email' } },
  session: { id: `sess-${id}` },
  score: 3.25,
  eval_results: evals,
  feedback: { strengths: [{ description: 'clear' }] },
  created_at: '2026-01-01T00:00:00.000',
  updated_at: '2026-01-01T00:00:00.000',
  ...over,
});

const roleOf = (id: string, details: unknown) =>
  JSON.stringify({
    id,
    user: { id: 'uh', email: 'h@example.org' },
    recommendation_status: 'RECOMMENDED',
    overall_score: 4.1,
    score_details: details,
    additional_scores: { cefr: { score: 'B2' } },
    created_at: '2026-01-01T00:00:00.000',
    order_index: 1,
  });

/** DETAILED records the split treats each its own way, in id order (the migration rewrites in id order too). */
const HOSTILE = [
  roleOf('zz-1-odd-evals', [
    detailOf('zz-d1', [evalOf(1, { extra: true })]),
    detailOf('zz-d2', [evalOf(2, { score: 2.5 })]),
    detailOf('zz-d3', [evalOf(3), 'not an object']),
    detailOf('zz-d4', []),
    detailOf('zz-d5', null),
    detailOf('zz-d6', [evalOf(4, { rationale: 'nul \u0000 tab \t "quoted" \\ 😀 é' })]),
  ]),
  roleOf('zz-2-no-id', [detailOf('zz-d7', [evalOf(5)]), { score: 1 }]),
  roleOf('zz-3-dup-id', [detailOf('zz-d8', [evalOf(6)]), detailOf('zz-d8', [evalOf(7)])]),
  roleOf('zz-4-empty', []),
  roleOf('zz-5-not-array', { id: 'x' }),
  // zz-d1 is held by the first record: this one keeps its whole raw.
  roleOf('zz-6-taken', [detailOf('zz-d1', [evalOf(8)]), detailOf('zz-d9', [evalOf(9)])]),
];

/** The tables a pull fills, compared column by column: all of today's columns but the change numbers. */
const RECORD_TABLES = ['campaigns', 'sync_state', 'session_results', 'role_results', 'score_details', 'eval_results'];

function rowsOf(db: BetterSqlite3.Database, table: string): unknown[] {
  const cols = columnNames(db, table)
    .filter((c) => c !== 'change_seq')
    // Positions of session results' eval results are written by pulls since version 6; older rows keep none.
    .map((c) =>
      table === 'eval_results' && c === 'position' ? "CASE WHEN parent_type = 'score_detail' THEN position END AS position" : c,
    );
  const names = cols.map((c) => c.replace(/^.* AS /, ''));
  return db.prepare(`SELECT ${cols.join(', ')} FROM ${table} ORDER BY ${names.join(', ')}`).all();
}

/**
 * A database at `version` as that release wrote it, with the records of `fresh`: its tables made by the
 * migrations up to `version` (frozen: what that release made), its rows copied from `fresh`; before
 * version 6, a DETAILED record's and its details' `raw` whole, as the `_full` views give them.
 */
function olderCopy(fresh: string, path: string, version: number): void {
  const db = new Database(path);
  // As db.ts opens a mirror: the links version 5 declares are not enforced.
  db.pragma('foreign_keys = OFF');
  migrate(db, path, version);
  db.prepare('ATTACH ? AS f').run(fresh);
  const tables = db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table'").pluck().all() as string[];
  for (const table of tables) {
    const cols = columnNames(db, table).join(', ');
    const from = version < 6 && (table === 'role_results' || table === 'score_details') ? `${table}_full` : table;
    db.exec(`INSERT INTO main.${table} (${cols}) SELECT ${cols} FROM f.${from}`);
  }
  db.exec('DETACH f');
  db.close();
}

describe('an old SQLite mirror migrates to what a pull of today writes', () => {
  it('version 1, 5 and 6 databases holding DETAILED records read back the same records, stored the same way', async () => {
    const s = await sim({ campaigns: 4, records: 60 });
    const dir = tempDir();
    const fresh = join(dir, 'fresh.db');
    const pulled = await cli(['pull', '--db', fresh, '--base-url', s.url, '--page-size', '25'], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(pulled.code, pulled.stderr).toBe(0);
    const served = servedRecords(s, 60);
    await s.close();
    const db = openDatabase(fresh);
    const hostile = HOSTILE.map(checked);
    db.transaction(() => new SqliteUpserts(db).upsertRoleResults(hostile, 'c-hostile', 'DETAILED'))();
    for (const r of hostile) served.set(r.id, r.raw);
    const count = (table: string, where = '1') => db.prepare(`SELECT count(*) FROM ${table} WHERE ${where}`).pluck().get() as number;
    expect(count('session_results')).toBeGreaterThan(0);
    expect(count('role_results', "report_type = 'DETAILED' AND raw LIKE '%\"score_details\":[]%'")).toBeGreaterThan(0);
    const expected = new Map(RECORD_TABLES.map((t) => [t, rowsOf(db, t)]));
    db.close();

    for (const version of [1, 5, 6]) {
      const path = join(dir, `v${version}.db`);
      olderCopy(fresh, path, version);
      if (version < 6) {
        const old = new Database(path, { readonly: true });
        // What the version-6 step rewrites: DETAILED records whose details are stored twice.
        expect(old.prepare(`SELECT count(*) FROM role_results WHERE raw LIKE '%"score_details":[{%'`).pluck().get()).toBeGreaterThan(0);
        old.close();
      }
      const upgraded = openDatabase(path);
      expect(upgraded.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      for (const table of RECORD_TABLES) expect(rowsOf(upgraded, table), `version ${version}: ${table}`).toEqual(expected.get(table));
      const full = upgraded.prepare('SELECT id, raw FROM role_results_full UNION ALL SELECT id, raw FROM session_results').all() as Array<{
        id: string;
        raw: string;
      }>;
      expect(full).toHaveLength(served.size);
      for (const r of full) expect(r.raw, `version ${version}: ${r.id}`).toBe(served.get(r.id));
      expect(upgraded.pragma('integrity_check', { simple: true })).toBe('ok');
      upgraded.close();
    }
  });
});

describe('a SQLite mirror upgraded by the first version 9 (its versions kept no request id)', () => {
  it('comes up with the schema of a mirror made today: change_times.request_id, the triggers and the view that read it', () => {
    const schemaOf = (db: BetterSqlite3.Database) =>
      db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all();
    const dir = tempDir();
    const today = new Database(join(dir, 'today.db'));
    migrate(today, 'today.db');
    const first = new Database(join(dir, 'first.db'));
    migrate(first, 'first.db', 8);
    first.exec(FIRST_V9);
    first.pragma('user_version = 9');
    expect(schemaOf(first)).not.toEqual(schemaOf(today));
    migrate(first, 'first.db');
    expect(first.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(schemaOf(first)).toEqual(schemaOf(today));
    today.close();
    first.close();
  });
});
