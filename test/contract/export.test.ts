/**
 * `export` on every kind that exports (./mirrors.ts says how to add a case): CSV and NDJSON with
 * every row, int64 exact and JSON columns as JSON; Parquet of every table as the mirror holds it;
 * an analyst's binary column as base64; and `--campaign` that selects no rows says why, so the empty
 * file does not pass for "no results yet". The views and --columns are ./export-views.test.ts's,
 * --since-last ./since-last.test.ts's.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { parseStrictCsv } from '../helpers/csv.js';
import { sim, tempDir } from '../helpers/index.js';
import { sharedSim } from '../helpers/shared-sim.js';
import { alter, MIRRORS, type MirrorKind, open, unsupported } from './mirrors.js';

async function readParquet(path: string) {
  const bytes = readFileSync(path);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = (await parquetReadObjects({ file, parsers: { timestampFromMicroseconds: (m: bigint) => m } })) as Array<
    Record<string, unknown>
  >;
  return { rows, schema: parquetMetadata(file).schema };
}

/** UTC microseconds of an ISO 8601 time as the service writes it (milliseconds at most, read as UTC without a zone). */
function micros(text: string): string {
  const ms = Date.parse(/(Z|[+-]\d\d:\d\d)$/.test(text) ? text : `${text}Z`);
  expect(Number.isNaN(ms), text).toBe(false);
  return String(BigInt(ms) * 1000n);
}

/** An analyst's own column of bytes, 'ABC\0', on the first campaign's row. */
const BINARY: Record<MirrorKind, string> = {
  sqlite: "ALTER TABLE campaigns ADD COLUMN attachment BLOB; UPDATE campaigns SET attachment = X'41424300'",
  ndjson: '',
  postgres: "ALTER TABLE campaigns ADD COLUMN attachment bytea; UPDATE campaigns SET attachment = '\\x41424300'::bytea",
};

describe.each(MIRRORS)('export (%s)', (kind) => {
  it('CSV and NDJSON: every row, int64 exact, JSON columns as JSON, filtered by campaign', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 25, orderIndexStart: 9_007_199_254_740_990n });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const session = s.data.campaigns.find((c) => c.type !== 'ROLE_SUBMISSION');
    const nd = await m.run(s, 'export', '--table', 'session-results', '--format', 'ndjson');
    expect(nd.code, nd.stderr).toBe(0);
    const lines = nd.stdout.trim().split('\n');
    expect(lines).toHaveLength(25);
    const served = new Set(Array.from({ length: 25 }, (_, i) => String(s.data.orderIndex(session as NonNullable<typeof session>, i))));
    for (const line of lines) {
      // order_index past 2^53 printed exactly, as a JSON number; raw embedded as an object.
      const o = /"order_index":(\d+)/.exec(line);
      expect(served.has(o?.[1] as string)).toBe(true);
      expect(line).toMatch(/"raw":\{/);
    }
    const csv = await m.run(s, 'export', '--table', 'campaigns', '--campaign', session?.name as string);
    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.trim().split('\r\n')).toHaveLength(2);
    expect(csv.stdout.split('\r\n')[0]).toBe('id,name,display_name,type,created_at,raw,seen_at');
    const none = await m.run(s, 'export', '--table', 'campaigns', '--campaign', 'no-such-campaign');
    expect(none.code).toBe(2);
  });

  it('Parquet: every table reads back as the mirror holds it', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 30, orderIndexStart: 9_007_199_254_740_990n });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const held = await m.records();
    const dir = tempDir();
    for (const [name, table] of [
      ['campaigns', 'campaigns'],
      ['session-results', 'session_results'],
      ['role-results', 'role_results'],
      ['score-details', 'score_details'],
      ['eval-results', 'eval_results'],
    ] as const) {
      const out = join(dir, `${name}.parquet`);
      const r = await m.run(s, 'export', '--table', name, '--format', 'parquet', '-o', out);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect((statSync(out).mode & 0o777).toString(8)).toBe('600');
      const { rows, schema: elements } = await readParquet(out);
      expect(rows.length, name).toBe(Number((await m.sql(`SELECT count(*) AS n FROM ${table}`))[0]?.n));
      expect(rows.length, name).toBeGreaterThan(0);
      const types = new Map(elements.map((e) => [e.name, e.type]));
      if (table === 'session_results' || table === 'role_results') {
        expect(types.get('order_index')).toBe('INT64');
        expect(types.get('created_at')).toBe('INT64');
        // order_index past 2^53, exact, as the mirror holds it.
        const byId = new Map((await m.sql(`SELECT id, CAST(order_index AS TEXT) AS o FROM ${table}`)).map((x) => [x.id, x.o]));
        for (const row of rows) expect(String(row.order_index)).toBe(byId.get(row.id));
        expect(rows.some((row) => (row.order_index as bigint) > 2n ** 53n)).toBe(true);
        // Timestamps: UTC microseconds of the record's instant.
        for (const row of rows) {
          const record = held.get(String(row.id))?.record as { created_at?: string } | undefined;
          expect(String(row.created_at), String(row.id)).toBe(micros(String(record?.created_at)));
        }
      }
      if (table === 'role_results') {
        expect(types.get('overall_score')).toBe('DOUBLE');
        // DETAILED records are stored once: the file has each whole raw back.
        for (const row of rows)
          expect((JSON.parse(row.raw as string) as { score_details: unknown[] }).score_details.length).toBeGreaterThan(0);
      }
      if (table === 'eval_results') expect(types.get('position')).toBe('INT64');
    }
  });

  it('NDJSON writes an analyst’s binary column as base64, never Node’s Buffer form', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sharedSim({ campaigns: 1, records: 1 });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    await alter(m, BINARY[kind]);
    const nd = await m.run(s, 'export', '--table', 'campaigns', '--format', 'ndjson');
    expect(nd.code, nd.stderr).toBe(0);
    expect(nd.stdout).not.toContain('Buffer');
    expect(JSON.parse(nd.stdout)).toMatchObject({ id: s.data.campaigns[0]?.id, attachment: 'QUJDAA==' });
  });

  it('--campaign that selects no rows says which table holds the campaign, or that the dates leave nothing; a campaign with rows says nothing', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 5 });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const role = s.data.campaigns.find((c) => c.type === 'ROLE_SUBMISSION');
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    const out = join(tempDir(), 'e.csv');
    const exp = (table: string, campaign: string, ...more: string[]) =>
      m.run(s, 'export', '--table', table, '--campaign', campaign, ...more);

    // To a file, and to stdout (the warning alone on stderr).
    const other = await exp('session-results', String(role?.name), '-o', out);
    expect(other.code, other.stderr).toBe(0);
    expect(parseStrictCsv(readFileSync(out, 'utf8'))).toHaveLength(1);
    const warning = `warning: --campaign "${role?.name}": no rows in --table session-results: it is a role campaign, whose results are in --table role-results\n`;
    expect(other.stderr).toContain(warning);
    const otherToStdout = await exp('session-results', String(role?.name));
    expect(otherToStdout.code, otherToStdout.stderr).toBe(0);
    expect(otherToStdout.stdout.trim().split('\r\n')).toHaveLength(1);
    expect(otherToStdout.stderr).toBe(warning);

    const dated = await exp('session-results', String(session?.name), '--since', '2999-01-01');
    expect(dated.code, dated.stderr).toBe(0);
    expect(dated.stderr).toBe(`warning: --campaign "${session?.name}": no rows in --table session-results in the dates given\n`);

    const own = await exp('session-results', String(session?.name), '-o', out);
    expect(own.code).toBe(0);
    expect(own.stderr).not.toContain('warning');
    expect(parseStrictCsv(readFileSync(out, 'utf8'))).toHaveLength(6);
    const ownToStdout = await exp('session-results', String(session?.name));
    expect(ownToStdout.code).toBe(0);
    expect(ownToStdout.stderr).toBe('');
    expect(ownToStdout.stdout.trim().split('\r\n')).toHaveLength(6);

    // --quiet: only errors.
    for (const where of [['-o', out], []]) {
      const quiet = await exp('role-results', String(session?.name), ...where, '--quiet');
      expect(quiet.code).toBe(0);
      expect(quiet.stderr).toBe('');
    }
  });
});
