/**
 * `export --table results|latest_results|skill_scores` (the analysts' views) and `--columns a,b,c`, on
 * every kind that exports (./mirrors.ts says how to add a case): every row of the view, read back as
 * the database gives it; only the columns asked for, in their order; a symbolic link at -o refused.
 */
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { parseStrictCsv } from '../helpers/csv.js';
import { tempDir } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';

/** A value as the mirror's driver reads it, as a CSV cell: null empty, numbers as JavaScript writes them, a timestamp in ISO 8601. */
const cell = (v: unknown): string => (v === null ? '' : v instanceof Date ? v.toISOString() : String(v));

/**
 * Every row of `view` as the mirror holds it. PostgreSQL's JSON columns are read as their text, as
 * its export writes them: its driver would parse them, a JSON null into NULL.
 */
async function viewRows(m: Mirror, view: string): Promise<Array<Record<string, unknown>>> {
  if (m.kind !== 'postgres') return m.sql(`SELECT * FROM ${view}`);
  const columns = await m.sql(
    `SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${view}' ORDER BY ordinal_position`,
  );
  const select = columns.map(({ name, type }) => (type === 'jsonb' || type === 'json' ? `"${name}"::text AS "${name}"` : `"${name}"`));
  return m.sql(`SELECT ${select.join(', ')} FROM ${view}`);
}

const sorted = (rows: string[][]) => [...rows].sort((a, b) => a.join('\u0001').localeCompare(b.join('\u0001')));

const readParquet = async (path: string) => {
  const bytes = readFileSync(path);
  return parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
};

describe.each(MIRRORS)('export of the views and --columns (%s)', (kind) => {
  // One mirror of this kind for the file's cases, which only read it.
  let pulled: Promise<{ s: RunningSimulator; m: Mirror }> | undefined;
  const mirror = () =>
    (pulled ??= (async () => {
      const s = await sharedSim({ campaigns: 4, records: 40 });
      const m = open(kind);
      const r = await m.run(s, 'pull');
      expect(r.code, r.stderr).toBe(0);
      return { s, m };
    })());
  /** `export` of the mirror into a new file; the file's text. */
  const exported = async (...args: string[]) => {
    const { s, m } = await mirror();
    const out = join(tempDir(), 'out');
    const r = await m.run(s, 'export', ...args, '-o', out);
    expect(r.code, r.stderr).toBe(0);
    return out;
  };

  for (const view of ['results', 'latest_results', 'skill_scores']) {
    it(`${view}: every row of the view, as CSV`, async (ctx) => {
      if (unsupported(kind, 'export', ctx)) return;
      const { m } = await mirror();
      const [header, ...rows] = parseStrictCsv(readFileSync(await exported('--table', view, '--raw-csv'), 'utf8'));
      const want = await viewRows(m, view);
      expect(want.length).toBeGreaterThan(0);
      expect(header).toEqual(Object.keys(want[0] as object));
      expect(sorted(rows)).toEqual(sorted(want.map((r) => Object.values(r).map(cell))));
    });
  }

  it('--columns: only the columns given, in their order, of a table and of a view, as NDJSON and Parquet', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const ndjsonKeys = async (...args: string[]) =>
      Object.keys(JSON.parse(readFileSync(await exported(...args, '--format', 'ndjson'), 'utf8').split('\n')[0] as string));
    expect(await ndjsonKeys('--table', 'role-results', '--columns', 'user_email,id,order_index')).toEqual([
      'user_email',
      'id',
      'order_index',
    ]);
    expect(await ndjsonKeys('--table', 'latest_results', '--columns', 'candidate_email,score')).toEqual(['candidate_email', 'score']);
    const rows = await readParquet(await exported('--table', 'skill_scores', '--format', 'parquet', '--columns', 'skill_key,score'));
    expect(Object.keys(rows[0] as object)).toEqual(['skill_key', 'score']);
  });

  it('an unknown, repeated or empty name is exit 2 naming it, and no file is written', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const { s, m } = await mirror();
    const out = join(tempDir(), 'never.csv');
    for (const [table, columns, says] of [
      ['session-results', 'id,nope', /session-results has no column "nope"; its columns are id, campaign_id/],
      ['session-results', 'id,id', /"id" is given twice/],
      ['session-results', 'id,,score', /a column name is empty/],
      ['session-results', '', /a column name is empty/],
      ['skill_scores', 'skill_key,nope', /skill_scores has no column "nope"/],
    ] as const) {
      const r = await m.run(s, 'export', '--table', table, '--columns', columns, '-o', out);
      expect(r.code, columns).toBe(2);
      expect(r.stderr).toMatch(says);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(existsSync(out)).toBe(false);
  });

  it('a symbolic link at -o is refused (exit 2), and what it points at is untouched', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const { s, m } = await mirror();
    const dir = tempDir();
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep me');
    const out = join(dir, 'out.csv');
    symlinkSync(victim, out);
    const r = await m.run(s, 'export', '--table', 'campaigns', '-o', out);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${out} is a symbolic link; campaign-sync does not follow links to its own files`);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
  });
});
