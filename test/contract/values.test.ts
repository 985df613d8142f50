/**
 * One rule per value on every backend: the same records, served by the simulator in every form its
 * samples show (`--quirks value-forms`: JSON nulls, times with offsets, `Z` or no zone and 0 to 9
 * fractional digits, empty strings; order_index past 2^53), pulled into SQLite and into PostgreSQL
 * and exported from each, in every format, from every table and view: value for value the same,
 * times included (in their one normal form: UTC, `Z`, milliseconds or microseconds), and the same
 * rows of latest_results, which are picked by time. JSON columns are compared as values where their
 * text is jsonb's own on PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { sim, tempDir } from '../helpers/index.js';
import { type Mirror, open, unsupported } from './mirrors.js';

const TABLES = [
  'campaigns',
  'session-results',
  'role-results',
  'score-details',
  'eval-results',
  'results',
  'latest_results',
  'skill_scores',
];

/** Both mirrors pulled from one simulator serving every form of value. */
async function pair(): Promise<{ s: RunningSimulator; lite: Mirror; pg: Mirror }> {
  const s = await sim({ campaigns: 2, records: 24, orderIndexStart: 9_007_199_254_740_990n, quirkNames: 'value-forms' });
  const lite = open('sqlite');
  const pg = open('postgres');
  for (const m of [lite, pg]) {
    const r = await m.run(s, 'pull');
    expect(r.code, r.stderr).toBe(0);
  }
  return { s, lite, pg };
}

async function exported(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<string> {
  const r = await m.run(s, 'export', ...args);
  expect(r.code, `${m.kind} export ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

/** NDJSON lines parsed losslessly, in one order whatever the backend's (views promise none). */
function ndjsonRows(text: string): Array<Record<string, unknown>> {
  const rows = text
    .split('\n')
    .filter(Boolean)
    .map((l) => parseJson(l) as Record<string, unknown>);
  for (const r of rows) for (const c of OWN) delete r[c];
  const key = (r: Record<string, unknown>) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
  return rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** The mirror's times: in CSV and NDJSON the normal form, in Parquet TIMESTAMP. */
const TIMES = new Set(['created_at', 'updated_at', 'evaluated_at', 'seen_at']);

/** UTC, `Z`, milliseconds as JavaScript writes them, or microseconds when there are any. */
const NORMAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.(\d{3}|\d{6})Z$/;

/** When each mirror last saw the campaign list: each its own pull's time, never the same. */
const OWN = new Set(['seen_at']);

/** JSON columns: PostgreSQL's jsonb gives the same value in its own text (key order, spacing). */
const JSON_TEXT = new Set(['raw', 'feedback', 'additional_scores', 'strengths', 'growths']);

/** CSV lines (header first, then the rows sorted: views promise no order). */
function csvLines(text: string): string[] {
  const [header, ...rows] = text.split('\r\n').filter(Boolean);
  return [header as string, ...rows.sort()];
}

async function readParquet(path: string) {
  const bytes = readFileSync(path);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = (await parquetReadObjects({ file, parsers: { timestampFromMicroseconds: (m: bigint) => m } })) as Array<
    Record<string, unknown>
  >;
  return { rows, schema: parquetMetadata(file).schema.slice(1) };
}

describe('one rule per value (sqlite and postgres)', () => {
  it('JSON null is SQL NULL on both, and CSV writes NULL as nothing and \'\' as ""', async (ctx) => {
    if (unsupported('postgres', 'export', ctx)) return;
    const { s, lite, pg } = await pair();
    const nulls =
      'SELECT (SELECT count(*) FROM session_results WHERE additional_scores IS NULL) AS sa, (SELECT count(*) FROM session_results WHERE feedback IS NULL) AS sf, (SELECT count(*) FROM role_results WHERE additional_scores IS NULL) AS ra, (SELECT count(*) FROM score_details WHERE feedback IS NULL) AS df';
    const [a, b] = [(await lite.sql(nulls))[0], (await pg.sql(nulls))[0]];
    expect(Number(a?.sa)).toBeGreaterThan(0);
    expect(Number(a?.ra)).toBeGreaterThan(0);
    expect(Object.values(b ?? {}).map(Number)).toEqual(Object.values(a ?? {}).map(Number));
    const jsonNulls = await pg.sql(
      "SELECT (SELECT count(*) FROM session_results WHERE additional_scores = 'null'::jsonb OR feedback = 'null'::jsonb) + (SELECT count(*) FROM role_results WHERE additional_scores = 'null'::jsonb) + (SELECT count(*) FROM score_details WHERE feedback = 'null'::jsonb) AS n",
    );
    expect(Number(jsonNulls[0]?.n)).toBe(0);
    for (const table of TABLES) {
      const all = csvLines(await exported(lite, s, '--table', table))[0]?.split(',') ?? [];
      const columns = all.filter((c) => !OWN.has(c) && !JSON_TEXT.has(c)).join(',');
      const x = csvLines(await exported(lite, s, '--table', table, '--columns', columns));
      const y = csvLines(await exported(pg, s, '--table', table, '--columns', columns));
      expect.soft(y, table).toEqual(x);
    }
    // The empty texts served (an empty recommendation) are "", the NULLs (no cefr) nothing.
    const roles = csvLines(await exported(pg, s, '--table', 'role-results', '--columns', 'id,recommendation_status,cefr'));
    expect(roles.some((l) => /^[^,]+,"",$/.test(l))).toBe(true);
    const sessions = csvLines(await exported(lite, s, '--table', 'session-results', '--columns', 'id,scenario_name,cefr'));
    expect(sessions.some((l) => /^[^,]+,"",$/.test(l))).toBe(true);
  });

  it('NDJSON and Parquet of every table and view are the same value for value; integers INT64, times TIMESTAMP', async (ctx) => {
    if (unsupported('postgres', 'export', ctx)) return;
    const { s, lite, pg } = await pair();
    const dir = tempDir();
    const forms = new Set<string>();
    for (const table of TABLES) {
      const a = ndjsonRows(await exported(lite, s, '--table', table, '--format', 'ndjson'));
      const b = ndjsonRows(await exported(pg, s, '--table', table, '--format', 'ndjson'));
      expect(a.length, table).toBeGreaterThan(0);
      expect.soft(b, table).toEqual(a);
      for (const r of a) {
        for (const c of TIMES) {
          const t = r[c];
          if (t === undefined || t === null) continue;
          expect.soft(t, `${table}.${c}`).toMatch(NORMAL);
          forms.add(String(t).length === 24 ? 'ms' : 'micros');
        }
      }
      const files = [join(dir, `${table}.sqlite.parquet`), join(dir, `${table}.pg.parquet`)] as const;
      await exported(lite, s, '--table', table, '--format', 'parquet', '-o', files[0]);
      await exported(pg, s, '--table', table, '--format', 'parquet', '-o', files[1]);
      const [p, q] = [await readParquet(files[0]), await readParquet(files[1])];
      const typeOf = (e: (typeof p.schema)[number]) => `${e.name}:${e.type}:${e.logical_type?.type ?? ''}`;
      expect.soft(q.schema.map(typeOf), table).toEqual(p.schema.map(typeOf));
      for (const e of p.schema) {
        if (['order_index', 'position', 'rank_in_campaign', 'version'].includes(e.name))
          expect.soft(e.type, `${table}.${e.name}`).toBe('INT64');
        if (TIMES.has(e.name) || e.name === 'valid_from') expect.soft(e.logical_type?.type, `${table}.${e.name}`).toBe('TIMESTAMP');
      }
      // Parquet holds JSON columns as text: jsonb's text is the same value in its own order and spacing.
      const plain = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).filter(([k]) => !JSON_TEXT.has(k)));
      const rows = (x: typeof p) =>
        ndjsonRows(x.rows.map((r) => JSON.stringify(plain(r), (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))).join('\n'));
      expect.soft(rows(q), table).toEqual(rows(p));
    }
    // Both forms were served and exported: microseconds where the time had them.
    expect([...forms].sort()).toEqual(['micros', 'ms']);
    // --as-of: its version column and its valid_from typed too.
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const asOf = join(dir, 'as-of.parquet');
    await exported(lite, s, '--table', 'session-results', '--as-of', at, '--format', 'parquet', '-o', asOf);
    const v = await readParquet(asOf);
    expect(v.schema.find((e) => e.name === 'version')?.type).toBe('INT64');
    expect(v.schema.find((e) => e.name === 'valid_from')?.logical_type?.type).toBe('TIMESTAMP');
    // --as-of rows are the records' values, times in their normal form, on both (valid_from is each mirror's own clock).
    for (const table of ['session-results', 'role-results']) {
      const [a, b] = await Promise.all(
        [lite, pg].map(async (m) =>
          ndjsonRows(await exported(m, s, '--table', table, '--as-of', at, '--format', 'ndjson')).map(({ valid_from, ...r }) => {
            expect.soft(valid_from, `${m.kind} ${table} --as-of valid_from`).toMatch(NORMAL);
            return r;
          }),
        ),
      );
      expect(a?.length, table).toBeGreaterThan(0);
      for (const r of a ?? [])
        for (const c of ['created_at', 'updated_at']) if (r[c] !== null) expect.soft(r[c], `${table} --as-of ${c}`).toMatch(NORMAL);
      expect.soft(b, `${table} --as-of`).toEqual(a);
    }
  });
});
