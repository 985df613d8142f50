import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportTable } from '../../../src/commands/export.js';
import { resolveSettings } from '../../../src/config/settings.js';
import { cleanStalePartials, partialPath } from '../../../src/core/fs/partial-file.js';
import { openPrivateFile } from '../../../src/core/fs/private-file.js';
import { neutralise } from '../../../src/export/writers.js';
import { TIME_COLUMNS } from '../../../src/store/model/export-tables.js';
import { normalTime } from '../../../src/store/model/times.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { parseStrictCsv, parseWithPython } from '../../helpers/csv.js';
import { BIN, cli, sim, tempDir } from '../../helpers/index.js';
import { needs } from '../../helpers/tools.js';

let dbPath: string;
let dir: string;
const TABLES = {
  campaigns: 'campaigns',
  'session-results': 'session_results',
  'role-results': 'role_results',
  'score-details': 'score_details',
  'eval-results': 'eval_results',
} as const;

beforeAll(async () => {
  const s = await sim({ campaigns: 4, records: 150, orderIndexStart: 2n ** 62n + 1n });
  dir = tempDir();
  dbPath = join(dir, 'm.db');
  const r = await cli(['pull', '--db', dbPath], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code).toBe(0);
  // Hostile cells, as a candidate could type them.
  const db = openDatabase(dbPath);
  db.prepare('UPDATE session_results SET user_email = \'=HYPERLINK("http://x")\' WHERE rowid = 1').run();
  db.prepare("UPDATE session_results SET scenario_name = '@SUM(A1)' WHERE rowid = 2").run();
  db.prepare("UPDATE session_results SET scenario_name = '+1-555' WHERE rowid = 3").run();
  // Line breaks of every kind inside cells, a formula after a line break, quotes, commas, non-ASCII.
  const set = (table: string, column: string, rowid: number, value: string) =>
    db.prepare(`UPDATE ${table} SET ${column} = ? WHERE rowid = ?`).run(value, rowid);
  set('session_results', 'user_email', 4, 'line1\nline2@example.com');
  set('session_results', 'scenario_name', 5, 'bare\rcarriage return');
  set('session_results', 'scenario_name', 6, 'crlf\r\ninside');
  set('session_results', 'scenario_name', 7, 'ok\n=1+1');
  set('session_results', 'scenario_name', 8, '"quoted", with a comma');
  set('session_results', 'scenario_name', 9, 'Réponse ✓ 日本語 🎉');
  set('session_results', 'scenario_name', 10, '\r=cmd|calc');
  set('session_results', 'user_email', 11, '');
  set('campaigns', 'display_name', 1, 'two\nlines, "quoted"');
  set('eval_results', 'rationale', 1, '\n=1+1\r\n@SUM(A1)\r');
  set('score_details', 'scenario_name', 1, 'a\rb\nc\r\nd');
  db.close();
});

/** A table's columns but the mirror's change numbers (store/sqlite/changes.ts), which exports leave out. */
function ownColumns(db: ReturnType<typeof openDatabase>, table: string): string {
  return (db.pragma(`table_info(${table})`) as Array<{ name: string }>)
    .map((c) => c.name)
    .filter((c) => c !== 'change_seq')
    .join(', ');
}

/** What each exported row must read back as: the table's rows in rowid order, cells as export writes them. */
function databaseRows(table: string, raw: boolean): string[][] {
  const db = openDatabase(dbPath, { readonly: true });
  // DETAILED records are stored once (schema 6): export gives their raw as the service sent it.
  const sql = ['role_results', 'score_details'].includes(table)
    ? `SELECT f.* FROM ${table} t JOIN ${table}_full f ON f.id = t.id ORDER BY t.rowid`
    : `SELECT ${ownColumns(db, table)} FROM ${table} ORDER BY rowid`;
  const stmt = db.prepare(sql).safeIntegers(true);
  const header = stmt.columns().map((c) => c.name);
  // Times leave in their normal form (store/model/times.ts), whatever the text stored.
  const rows = (stmt.raw(true).all() as unknown[][]).map((r) =>
    r
      .map((v, i) => (TIME_COLUMNS.has(header[i] as string) ? normalTime(v) : v))
      .map((v) => (v === null ? '' : typeof v === 'string' ? (raw ? v : neutralise(v)) : String(v))),
  );
  db.close();
  return [header, ...rows];
}

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);
const partialsIn = (d: string) => readdirSync(d).filter((f) => f.includes('partial'));

async function until(test: () => boolean, ms = 30_000) {
  const started = Date.now();
  while (!test()) {
    if (Date.now() - started > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const count = (table: string, where = '') => {
  const db = openDatabase(dbPath, { readonly: true });
  const n = db.prepare(`SELECT count(*) FROM ${table} ${where}`).pluck().get() as number;
  db.close();
  return n;
};

describe('export', () => {
  it('every table reads back through a real CSV parser with the table row count', async () => {
    for (const [name, table] of Object.entries(TABLES)) {
      const r = await cli(['export', '--db', dbPath, '--table', name]);
      expect(r.code, name).toBe(0);
      const rows = parse(r.stdout, { columns: true, bom: true }) as Array<Record<string, string>>;
      expect(rows.length, name).toBe(count(table));
      expect(r.stdout.includes('\r\n')).toBe(true);
    }
  });

  it('keeps non-ASCII text, quotes, embedded newlines and int64 exact', async () => {
    const r = await cli(['export', '--db', dbPath, '--table', 'eval-results']);
    const rows = parse(r.stdout, { columns: true }) as Array<Record<string, string>>;
    const db = openDatabase(dbPath, { readonly: true });
    const rationales = new Set(db.prepare('SELECT rationale FROM eval_results').pluck().all() as string[]);
    expect(rows.some((x) => x.rationale?.includes('\n'))).toBe(true);
    expect(rows.some((x) => /Réponse/.test(x.rationale ?? ''))).toBe(true);
    expect(rows.some((x) => x.rationale?.includes('"'))).toBe(true);
    for (const x of rows) expect(rationales.has(x.rationale as string)).toBe(true);
    const sr = await cli(['export', '--db', dbPath, '--table', 'session-results']);
    const srRows = parse(sr.stdout, { columns: true }) as Array<Record<string, string>>;
    const exact = db.prepare('SELECT order_index FROM session_results ORDER BY rowid').safeIntegers(true).pluck().all() as bigint[];
    expect(srRows.map((x) => BigInt(x.order_index as string))).toEqual(exact);
    db.close();
  });

  it('neutralises formula cells unless --raw-csv; numbers untouched', async () => {
    const safe = parse((await cli(['export', '--db', dbPath, '--table', 'session-results'])).stdout, { columns: true }) as Array<
      Record<string, string>
    >;
    expect(safe[0]?.user_email).toBe('\'=HYPERLINK("http://x")');
    expect(safe[1]?.scenario_name).toBe("'@SUM(A1)");
    expect(safe[2]?.scenario_name).toBe("'+1-555");
    const raw = parse((await cli(['export', '--db', dbPath, '--table', 'session-results', '--raw-csv'])).stdout, {
      columns: true,
    }) as Array<Record<string, string>>;
    expect(raw[0]?.user_email).toBe('=HYPERLINK("http://x")');
    expect(neutralise('-2+3')).toBe("'-2+3");
    expect(neutralise('\tx')).toBe("'\tx");
    expect(neutralise('plain')).toBe('plain');
  });

  it('NDJSON export embeds JSON columns and keeps int64 exact', async () => {
    const r = await cli(['export', '--db', dbPath, '--table', 'role-results', '--format', 'ndjson']);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBe(count('role_results'));
    const first = lines[0] as string;
    expect(JSON.parse(first).raw.score_details.length).toBeGreaterThan(0);
    expect(first).toMatch(/"order_index":46116860184273\d{5}/);
  });

  it('filters by campaign and by day, and writes -o files 0600 with no partial left behind', async () => {
    const db = openDatabase(dbPath, { readonly: true });
    const campaign = db.prepare('SELECT campaign_id FROM session_results LIMIT 1').pluck().get() as string;
    const day = db
      .prepare('SELECT substr(created_at, 1, 10) FROM session_results WHERE campaign_id = ? LIMIT 1 OFFSET 40')
      .pluck()
      .get(campaign) as string;
    db.close();
    const out = join(dir, 'filtered.csv');
    const r = await cli([
      'export',
      '--db',
      dbPath,
      '--table',
      'session-results',
      '--campaign',
      campaign,
      '--since',
      day,
      '--until',
      day,
      '-o',
      out,
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/wrote \d+ rows of session-results/);
    const rows = parse(readFileSync(out), { columns: true }) as Array<Record<string, string>>;
    expect(rows.length).toBe(count('session_results', `WHERE campaign_id = '${campaign}' AND substr(created_at, 1, 10) = '${day}'`));
    expect(rows.length).toBeGreaterThan(0);
    expect((statSync(out).mode & 0o777).toString(8)).toBe('600');
    const bad = await cli(['export', '--db', dbPath, '--table', 'session-results', '-o', join(dir, 'no-such-dir', 'x.csv')]);
    // A local write failure is a storage failure (exit 74), not a usage error.
    expect(bad.code).toBe(74);
    expect(bad.stderr).toMatch(/cannot write/);
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    expect((await cli(['export', '--db', join(dir, 'missing.db'), '--table', 'campaigns'])).stderr).toMatch(/no database at/);
  });

  it('every export reads back row by row as the database holds it, in a strict RFC 4180 reader and in Python', async (ctx) => {
    needs(ctx, 'python3');
    const out = tempDir();
    for (const [name, table] of Object.entries(TABLES)) {
      for (const raw of [false, true]) {
        const file = join(out, `${name}${raw ? '-raw' : ''}.csv`);
        const r = await cli(['export', '--db', dbPath, '--table', name, '-o', file, ...(raw ? ['--raw-csv'] : [])]);
        expect(r.code, name).toBe(0);
        const expected = databaseRows(table, raw);
        expect(expected.length, name).toBeGreaterThan(1);
        const strict = parseStrictCsv(readFileSync(file, 'utf8'));
        expect(strict.length, `${name}: rows read`).toBe(expected.length);
        strict.forEach((row, i) => {
          expect(row, `${name}${raw ? ' --raw-csv' : ''} row ${i}`).toEqual(expected[i]);
        });
        expect(parseWithPython(file), `${name} in Python`).toEqual(strict);
      }
    }
    // The formula after a line break stays inside its quoted cell.
    const text = readFileSync(join(out, 'session-results.csv'), 'utf8');
    expect(text).toContain('"ok\n=1+1"');
    expect(text).toContain('"bare\rcarriage return"');
    expect(text).toContain(`"'\r=cmd|calc"`);
  });

  it('-o follows no planted symlink: a link at -o is refused (exit 2), the victims are untouched', async () => {
    const d = tempDir();
    const out = join(d, 'out.csv');
    const victim = join(d, 'victim.txt');
    const target = join(d, 'target-victim.txt');
    writeFileSync(victim, 'precious\n', { mode: 0o644 });
    writeFileSync(target, 'also precious\n', { mode: 0o644 });
    // The name the old code used, predictable from the pid; and a link where the output goes.
    symlinkSync(victim, `${out}.partial-${process.pid}`);
    symlinkSync(target, out);
    await expect(
      exportTable(resolveSettings('export', { db: dbPath, table: 'session-results', output: out, quiet: true })),
    ).rejects.toThrow(`${out} is a symbolic link; campaign-sync does not follow links to its own files`);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readFileSync(target, 'utf8')).toBe('also precious\n');
    expect(lstatSync(out).isSymbolicLink()).toBe(true);
    expect(readdirSync(d).sort()).toEqual(['out.csv', `out.csv.partial-${process.pid}`, 'target-victim.txt', 'victim.txt'].sort());
    // Without the link, the output is a private file, whatever the umask.
    rmSync(out);
    const umask = process.umask(0);
    try {
      expect(await exportTable(resolveSettings('export', { db: dbPath, table: 'session-results', output: out, quiet: true }))).toBe(0);
    } finally {
      process.umask(umask);
    }
    expect(lstatSync(out).isFile()).toBe(true);
    expect(modeOf(out)).toBe('600');
    expect(parseStrictCsv(readFileSync(out, 'utf8')).length).toBe(count('session_results') + 1);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('the temporary file is created exclusively with an unpredictable name, never through a link', () => {
    const d = tempDir();
    const out = join(d, 'x.csv');
    const a = partialPath(out);
    const b = partialPath(out);
    expect(a).not.toBe(b);
    expect(a.startsWith(join(d, `.x.csv.campaign-sync-${process.pid}-`))).toBe(true);
    expect(a).toMatch(/-[0-9a-f]{16}\.partial$/);
    const victim = join(d, 'victim');
    writeFileSync(victim, 'precious');
    symlinkSync(victim, a);
    expect(() => openPrivateFile(a, { exclusive: true })).toThrow(`${a} is a symbolic link`);
    expect(readFileSync(victim, 'utf8')).toBe('precious');
  });

  it("cleans only this tool's stale partials of the same target: dead pid, or untouched for an hour", async () => {
    const d = tempDir();
    const out = join(d, 'r.csv');
    const dead = spawn(process.execPath, ['-e', '']);
    await once(dead, 'close');
    const name = (pid: number, hex = '0123456789abcdef') => join(d, `.r.csv.campaign-sync-${pid}-${hex}.partial`);
    const deadOne = name(dead.pid as number);
    const liveFresh = name(process.pid);
    const liveOld = name(process.pid, 'fedcba9876543210');
    const otherTarget = join(d, `.s.csv.campaign-sync-${dead.pid}-0123456789abcdef.partial`);
    const notOurs = join(d, `.r.csv.campaign-sync-${dead.pid}-nothex.partial`);
    const link = name(dead.pid as number, 'aaaaaaaaaaaaaaaa');
    for (const f of [deadOne, liveFresh, liveOld, otherTarget, notOurs]) writeFileSync(f, 'x', { mode: 0o600 });
    symlinkSync(join(d, 'elsewhere'), link);
    const hourAgo = (Date.now() - 61 * 60_000) / 1000;
    utimesSync(liveOld, hourAgo, hourAgo);
    expect(cleanStalePartials(out).sort()).toEqual([deadOne, liveOld].sort());
    expect(readdirSync(d).sort()).toEqual([liveFresh, otherTarget, notOurs, link].map((p) => p.slice(d.length + 1)).sort());
    // A folder that cannot be listed is not an error here: creating the file reports it.
    expect(cleanStalePartials(join(d, 'missing', 'x.csv'))).toEqual([]);
  });

  it('a kill -9 export leaves a private partial, and the next export of that file removes it', async () => {
    const d = tempDir();
    const big = join(d, 'big.db');
    const db = openDatabase(big);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
      INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, skill_label, score, score_text, rationale, evaluated_at, campaign_id)
      SELECT 'session_result', 'p' || i, 'e' || i, 'JUDGMENT', 'Judgment', 3.5, '3.5', 'Rationale, row ' || i, '2026-01-01T00:00:00Z', 'c' FROM n`);
    db.close();
    const out = join(d, 'out.csv');
    const child = spawn(process.execPath, [BIN, 'export', '--db', big, '--table', 'eval-results', '-o', out], { stdio: 'ignore' });
    // Killed mid-way: the partial exists and holds rows (it cannot be renamed yet: 400,000 rows take seconds).
    await until(() => partialsIn(d).some((f) => (statSync(join(d, f), { throwIfNoEntry: false })?.size ?? 0) > 0));
    child.kill('SIGKILL');
    await once(child, 'close');
    const left = partialsIn(d);
    expect(left.length).toBe(1);
    expect(modeOf(join(d, left[0] as string))).toBe('600');
    expect(existsSync(out)).toBe(false);
    const next = await cli(['export', '--db', dbPath, '--table', 'campaigns', '-o', out, '--quiet']);
    expect(next.code).toBe(0);
    expect(next.stderr).toBe('');
    expect(partialsIn(d)).toEqual([]);
    expect(parseStrictCsv(readFileSync(out, 'utf8')).length).toBe(count('campaigns') + 1);
  }, 120_000);

  it('a local write failure exits 74 naming the file the user gave, never the temporary one', async () => {
    const d = tempDir();
    writeFileSync(join(d, 'afile'), '');
    mkdirSync(join(d, 'afolder'));
    for (const [output, words] of [
      ['nodir/x.csv', 'no such file or folder'],
      ['afile/x.csv', 'a part of the path is not a folder'],
    ] as const) {
      const r = await cli(['export', '--db', dbPath, '--table', 'campaigns', '-o', output], { cwd: d });
      expect(r.code, output).toBe(74);
      expect(r.stderr, output).toMatch(new RegExp(`^campaign-sync: cannot write ${output}: ${words}`));
      expect(r.stderr, output).not.toMatch(/partial|campaign-sync-\d/);
      expect(r.stderr.trim().split('\n').length).toBe(1);
    }
    // A folder given as the output file is a bad flag value: exit 2, naming it.
    const folder = await cli(['export', '--db', dbPath, '--table', 'campaigns', '-o', 'afolder'], { cwd: d });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toBe('campaign-sync: -o afolder: is a folder; give a file name\n');
    expect(readdirSync(d).sort()).toEqual(['afile', 'afolder']);
    expect(readdirSync(join(d, 'afolder'))).toEqual([]);
  });
});
