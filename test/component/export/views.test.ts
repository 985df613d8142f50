/**
 * `export --table results|latest_results|skill_scores` (the analysts' views) and `--columns a,b,c` from
 * SQLite beyond the contract's cases (test/contract/export-views.test.ts: every row of each view, the
 * columns asked for in their order, bad names): the dashed spellings, JSON arrays in NDJSON, filters,
 * Parquet of a view, a table's columns read by row id ranges, a DETAILED raw given whole.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportTable } from '../../../src/commands/export.js';
import { resolveSettings } from '../../../src/config/settings.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { parseStrictCsv } from '../../helpers/csv.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

let dbPath: string;
let dir: string;

beforeAll(async () => {
  const s = await sim({ campaigns: 4, records: 40 });
  dir = tempDir();
  dbPath = join(dir, 'm.db');
  const r = await runCli(['pull', '--db', dbPath], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code, r.stderr).toBe(0);
});

let n = 0;
async function exported(args: Record<string, string>): Promise<string> {
  const out = join(dir, `out-${n++}`);
  expect(await exportTable(resolveSettings('export', { db: dbPath, quiet: true, output: out, table: 'results', ...args }))).toBe(0);
  return readFileSync(out, 'utf8');
}

/** The database's rows of `sql`, as CSV cells (null as empty, numbers as JavaScript writes them). */
function cells(sql: string): { header: string[]; rows: string[][] } {
  const db = openDatabase(dbPath, { readonly: true });
  try {
    const stmt = db.prepare(sql).safeIntegers(true);
    const header = stmt.columns().map((c) => c.name);
    const rows = (stmt.raw(true).all() as unknown[][]).map((r) => r.map((v) => (v === null ? '' : String(v))));
    return { header, rows };
  } finally {
    db.close();
  }
}

describe('export of the analysts views', () => {
  it('the SQL spellings and the dashed ones name the same view (the CLI)', async () => {
    const r = await runCli(['export', '--db', dbPath, '--table', 'latest-results', '--columns', 'candidate_email']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\r\n')[0]).toBe('candidate_email');
  });

  it('NDJSON embeds the strengths and growths as JSON arrays', async () => {
    const lines = (await exported({ table: 'results', format: 'ndjson' })).trimEnd().split('\n');
    const objects = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objects.length).toBe(cells('SELECT * FROM results').rows.length);
    const sessions = objects.filter((o) => o.kind === 'session');
    expect(sessions.length).toBeGreaterThan(0);
    // Null where the feedback is not an object; a JSON array (not its text) everywhere else.
    expect(sessions.some((o) => Array.isArray(o.strengths) && Array.isArray(o.growths))).toBe(true);
    expect(sessions.every((o) => typeof o.strengths !== 'string' && typeof o.growths !== 'string')).toBe(true);
  });

  it('--campaign and --since filter a view', async () => {
    const campaign = cells('SELECT campaign_id FROM skill_scores LIMIT 1').rows[0]?.[0] as string;
    const [, ...rows] = parseStrictCsv(await exported({ table: 'skill_scores', campaign, columns: 'campaign_id,skill_key' }));
    expect(rows.length).toBe(cells(`SELECT 1 FROM skill_scores WHERE campaign_id = '${campaign}'`).rows.length);
    expect(rows.every((r) => r[0] === campaign)).toBe(true);
    const [, ...none] = parseStrictCsv(await exported({ table: 'results', since: '2999-01-01' }));
    expect(none).toEqual([]);
  });

  it('Parquet of a view reads back with every row', async () => {
    const out = join(dir, 'latest.parquet');
    expect(
      await exportTable(resolveSettings('export', { db: dbPath, quiet: true, output: out, table: 'latest_results', format: 'parquet' })),
    ).toBe(0);
    const bytes = readFileSync(out);
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const rows = await parquetReadObjects({ file });
    expect(rows.length).toBe(cells('SELECT * FROM latest_results').rows.length);
  });
});

describe('--columns', () => {
  it('a table: only the columns given, in their order, and no raw JSON (CSV, read by row id ranges)', async () => {
    const text = await exported({ table: 'session-results', columns: 'user_email, id,score' });
    const [header, ...rows] = parseStrictCsv(text);
    expect(header).toEqual(['user_email', 'id', 'score']);
    expect(rows).toEqual(cells('SELECT user_email, id, score FROM session_results ORDER BY rowid').rows);
    expect(text).not.toContain('"raw"');
  });

  it('raw of a DETAILED role result is given whole, as the service sent it', async () => {
    const lines = (await exported({ table: 'role-results', format: 'ndjson', columns: 'id,raw' })).trimEnd().split('\n');
    const want = new Map(cells('SELECT id, raw FROM role_results_full').rows.map(([id, raw]) => [id, JSON.parse(raw as string)]));
    expect(lines.length).toBe(want.size);
    for (const line of lines) {
      const o = JSON.parse(line) as { id: string; raw: unknown };
      expect(Object.keys(o)).toEqual(['id', 'raw']);
      expect(o.raw).toEqual(want.get(o.id));
    }
  });
});
