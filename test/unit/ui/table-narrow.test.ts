/**
 * Tables on a terminal narrower than the whole table: columns with nothing to say (all zero) and
 * low-value ones are dropped and long texts cut with an ellipsis, as gh does (six streams in six
 * lines at 80 columns, not fifty); a campaign's name is never cut, an id only to a prefix that tells
 * it apart. Below STACK_BELOW (60) columns, or when the names cannot stay whole, a table is one block
 * a row. A pipe's TSV keeps every column.
 */
import { describe, expect, it } from 'vitest';
import type { StreamRow } from '../../../src/store/sqlite/checkpoints.js';
import type { PassResult } from '../../../src/sync/pass.js';
import { statusTable } from '../../../src/ui/status.js';
import { passTable } from '../../../src/ui/summary.js';
import { renderTable, STACK_BELOW, uniquePrefix } from '../../../src/ui/table.js';

const NOW = Date.parse('2026-11-25T08:00:00Z');
const NAMES = [
  'session-1-tecnicos-de-soporte',
  'role-2-trust-safety-reviewers',
  'session-3-claims-handlers-q3',
  'role-4-claims-handlers-q3',
  'session-5-support-agents-emea',
  'role-6-tecnicos-de-soporte',
];

/** The demo's pass: six streams of 250 records each. */
function demoPass(): PassResult {
  return {
    streams: NAMES.map((name, i) => ({
      id: { campaignId: `c${i}`, endpoint: i % 2 ? 'role' : 'session', reportType: i % 2 ? 'DETAILED' : null, key: `k${i}` },
      campaignName: name,
      status: 'ok',
      records: 250,
      inserted: 250,
      updated: 0,
      pages: 3,
      requests: 3,
      bytes: 1000,
      quarantined: 0,
      quarantinedBy: {},
      cursor: 3494n,
      durationMs: 136 + i,
    })) as PassResult['streams'],
    skipped: [],
    requests: 19,
    records: 1500,
    bytes: 6000,
    durationMs: 357,
    interrupted: false,
  };
}

function streams(withError: boolean): StreamRow[] {
  return NAMES.map((name, i) => ({
    stream: `s${i}`,
    campaign_id: name,
    endpoint: i % 2 ? 'role' : 'session',
    report_type: i % 2 ? 'DETAILED' : null,
    cursor: 9007199254740993n + BigInt(i),
    records: 250n,
    last_success_at: '2026-11-25T07:58:00Z',
    last_error: withError && i === 1 ? '503 Service unavailable — GET /v1/campaigns/role/results (campaign c1) [request_id 8c0ffee]' : null,
    last_error_at: withError && i === 1 ? '2026-11-25T07:59:00Z' : null,
    unlisted_since: null,
    type_changed_to: null,
    id_conflicts: 0,
  }));
}

/** The header row's column names, or undefined when the table is stacked. */
function headers(table: string): string[] | undefined {
  const head = table.split('\n')[1];
  if (!head?.startsWith('│')) return undefined;
  return head
    .split('│')
    .slice(1, -1)
    .map((c) => c.trim());
}

function fits(table: string, width: number): void {
  for (const line of table.split('\n')) expect(Array.from(line).length, line).toBeLessThanOrEqual(width);
}

describe('the pull summary on a narrow terminal', () => {
  const table = (width: number) => passTable(demoPass(), { tsv: false, width }).split('\n1,500 records')[0] as string;

  it('at 100 columns drops pages first (and the quarantined column, with nothing to say), every name whole', () => {
    const t = table(100);
    fits(t, 100);
    // No stream held records back: the quarantined column says nothing and is left out.
    expect(headers(t)).toEqual(['campaign', 'type', 'new', 'updated', 'requests', 'time', 'status']);
    expect(t).toContain('│ session-1-tecnicos-de-soporte │');
    expect(t).toContain('│ role-4-claims-handlers-q3     │');
  });

  it('at 80 columns drops pages, requests and time (the line below has the totals): one line a stream, names whole', () => {
    const t = table(80);
    fits(t, 80);
    expect(headers(t)).toEqual(['campaign', 'type', 'new', 'updated', 'status']);
    // Six streams, a header and two borders: nine lines, not fifty-four.
    expect(t.split('\n')).toHaveLength(9);
    for (const name of NAMES) expect(t).toContain(`│ ${name} `);
    expect(t).toContain('role DETAILED');
  });

  it('counts the records each stream quarantined, in the table and the line below it', () => {
    const pass = demoPass();
    Object.assign(pass.streams[1] as object, { quarantined: 12 });
    Object.assign(pass.streams[4] as object, { quarantined: 18 });
    const out = passTable(pass, { tsv: false, width: 80 });
    fits(out.split('\n1,500 records')[0] as string, 80);
    expect(headers(out)).toEqual(['campaign', 'type', 'new', 'quarantined', 'status']);
    expect(out).toMatch(/│ role-2-trust-safety-reviewers │ role DETAILED │ 250 │ +12 │ ok +│/);
    expect(out).toMatch(/│ session-1-tecnicos-de-soporte │ session +│ 250 │ +0 │ ok +│/);
    expect(out).toContain(', 30 quarantined (`campaign-sync quarantine list`)');
  });

  it('at 60 columns, where the names cannot stay whole beside type, new and status: one block a stream', () => {
    const t = table(60);
    fits(t, 60);
    expect(headers(t)).toBeUndefined();
    expect(t.split('\n')[0]).toBe('session-1-tecnicos-de-soporte');
  });

  it('at 40 columns, one block a stream, every line within the width', () => {
    const t = table(40);
    fits(t, 40);
    expect(headers(t)).toBeUndefined();
    expect(t.split('\n')[0]).toBe('session-1-tecnicos-de-soporte');
    expect(t).toContain('  requests: 3');
    expect(t.match(/^ {2}status: {3}ok$/gm)).toHaveLength(6);
  });

  it('in a pipe, TSV with every column whatever the width', () => {
    const tsv = passTable(demoPass(), { tsv: true, width: 40 }).split('\n');
    expect(tsv[0]).toBe('campaign\ttype\tnew\tupdated\tpages\trequests\ttime\tquarantined\tstatus');
    expect(tsv[1]).toBe('session-1-tecnicos-de-soporte\tsession\t250\t0\t3\t3\t136 ms\t0\tok');
  });
});

describe('status on a narrow terminal', () => {
  const table = (width: number, error = false) => statusTable(streams(error), (id) => id, NOW, { tsv: false, width });

  it('drops the columns with nothing to say (zero counts, no error) first, then the cursor (a 19-digit int64)', () => {
    const t = table(100);
    fits(t, 100);
    // Healthy: room for the cursor.
    expect(headers(t)).toEqual(['campaign', 'endpoint', 'report', 'cursor', 'records', 'last success']);
    expect(headers(table(100, true))).toEqual(['campaign', 'endpoint', 'records', 'last success', 'last error']);
    expect(t).toContain('role-2-trust-safety-reviewers');
  });

  it('a count that is not all zero keeps its column', () => {
    const rows = streams(false).map((r, i) => ({ ...r, id_conflicts: i === 3 ? 2 : 0 }));
    expect(headers(statusTable(rows, (id) => id, NOW, { tsv: false, width: 140 }))).toContain('id conflicts');
    expect(headers(statusTable(streams(false), (id) => id, NOW, { tsv: false, width: 140 }))).not.toContain('id conflicts');
  });

  it('at 80 columns the error shows its reason (it leads the text), the names stay whole', () => {
    const t = table(80, true);
    fits(t, 80);
    expect(headers(t)).toEqual(['campaign', 'records', 'last success', 'last error']);
    expect(t.split('\n')).toHaveLength(9);
    expect(t).toContain('│ 1 min ago: 503 Ser… │');
    for (const name of NAMES) expect(t).toContain(`│ ${name} `);
  });

  it('at 60 columns, too narrow for whole names beside the health columns: one block a stream', () => {
    const t = table(60, true);
    fits(t, 60);
    expect(headers(t)).toBeUndefined();
    expect(t).toContain('role-2-trust-safety-reviewers\n');
    expect(t).toMatch(/ {2}last error: +1 min ago: 503 Service unavailable/);
  });

  it('at 40 columns, one block a stream with every field', () => {
    const t = table(40, true);
    fits(t, 40);
    expect(headers(t)).toBeUndefined();
    expect(t).toContain('  cursor:       9007199254740994');
    expect(t).toMatch(/ {2}last error: {3}1 min ago: 503 Service …/);
  });
});

describe('renderTable', () => {
  const HEAD = ['campaign', 'stream', 'cursor', 'records', 'last success', 'last error'];
  const ROWS = [
    ['role-2-trust-safety-reviewers', 'role DETAILED', '1024', '1,500', '2026-11-25T07:02:19.435Z', ''],
    ['session-1-customer-support-emea', 'session', '99', '250', '2026-11-25T07:02:19.435Z', '503 — GET /v1/campaigns/session/results'],
  ];

  it(`stacks only below ${STACK_BELOW} columns; a table whose columns always stay and do not fit is stacked too`, () => {
    const out = renderTable(HEAD, ROWS, { tsv: false, width: STACK_BELOW - 1 });
    for (const line of out.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(STACK_BELOW - 1);
    expect(out.split('\n')[0]).toBe('role-2-trust-safety-reviewers');
    expect(out).toContain('  records:      1,500');
    expect(out).toMatch(/ {2}last error: {3}503 — GET \/v1\/campaigns\/session\/results/);
    expect(out).not.toMatch(/[┌│]/);
    // No column may be cut or dropped: at 100 columns it cannot fit, and is stacked.
    expect(renderTable(HEAD, ROWS, { tsv: false, width: 100 })).not.toMatch(/[┌│]/);
  });

  it('keeps the boxed table when it fits', () => {
    for (const width of [200, 140]) {
      const out = renderTable(HEAD, ROWS, { tsv: false, width });
      expect(out).toMatch(/┌/);
      for (const line of out.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(width);
    }
  });

  it('drops the lowest rank first, the rightmost of equal ranks, and never a column without a rank', () => {
    const columns = [
      { head: 'a', shrink: 25 },
      { head: 'b', drop: 2 },
      { head: 'c', drop: 1 },
      { head: 'd', drop: 1 },
    ];
    const row = ['x'.repeat(40), 'y'.repeat(15), 'z'.repeat(15), 'w'.repeat(15)];
    // Every column, the first cut to fit: 25 + 3 × 15 + 13 of borders is 83.
    expect(headers(renderTable(columns, [row], { tsv: false, width: 90 }))).toEqual(['a', 'b', 'c', 'd']);
    expect(headers(renderTable(columns, [row], { tsv: false, width: 75 }))).toEqual(['a', 'b', 'c']);
    expect(headers(renderTable(columns, [row], { tsv: false, width: 64 }))).toEqual(['a', 'b']);
    // `a` always stays; when even it cannot fit at its narrowest, the table is stacked.
    const wide = [{ head: 'a', shrink: 70, max: 100 }, ...columns.slice(1)];
    expect(headers(renderTable(wide, [['x'.repeat(80), 'y', 'z', 'w']], { tsv: false, width: 70 }))).toBeUndefined();
  });

  it('a very narrow terminal still gets every row and label, cut to the width', () => {
    const out = renderTable(HEAD, ROWS, { tsv: false, width: 30 });
    for (const line of out.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(30);
    expect(out.match(/ {2}records: /g)).toHaveLength(2);
  });

  it('a name column is never cut: a table that cannot keep it whole is stacked, where it is not cut either', () => {
    const columns = [
      { head: 'name', whole: true },
      { head: 'note', shrink: 10 },
    ];
    const long = `campaign-${'x'.repeat(90)}`;
    const out = renderTable(columns, [[long, 'a note that is long enough to be cut']], { tsv: false, width: 80 });
    expect(headers(out)).toBeUndefined();
    expect(out.split('\n')[0]).toBe(long);
    const fitting = renderTable(columns, [['short-name', 'a note that is long enough to be cut']], { tsv: false, width: 60 });
    expect(fitting).toContain('│ short-name │ a note that is long enough to be cut │');
  });

  it('an id is cut without an ellipsis to the shortest prefix (at least its minimum) that tells the ids apart', () => {
    const columns = [
      { head: 'id', prefix: 8 },
      { head: 'name', whole: true },
      { head: 'display name', shrink: 12, drop: 1 },
    ];
    const rows = [
      ['1fd25390-c20a-4b40-9a80-74259b12ee9c', 'role-2-trust-safety-reviewers', 'Trust & safety reviewers (2)'],
      ['1fd25390-c2ff-4b40-9a80-000000000000', 'role-9-twin-prefix', 'Twin prefix (9)'],
      ['bd10d844-6659-4d84-8011-59d53e0133ac', 'session-1-tecnicos-de-soporte', 'Técnicos de soporte (1)'],
    ];
    const narrow = renderTable(columns, rows, { tsv: false, width: 80 });
    fits(narrow, 80);
    // The first two share `1fd25390-c2`: 12 characters tell them apart; the third is cut as long.
    expect(narrow).toContain('│ 1fd25390-c20 │ role-2-trust-safety-reviewers │');
    expect(narrow).toContain('│ 1fd25390-c2f │ role-9-twin-prefix            │');
    expect(narrow).toContain('│ bd10d844-665 │');
    expect(narrow).not.toMatch(/[0-9a-f]…/);
    // With room, whole.
    expect(renderTable(columns, rows, { tsv: false, width: 140 })).toContain('│ 1fd25390-c20a-4b40-9a80-74259b12ee9c │');
    expect(uniquePrefix(['abcdefgh1', 'abcdefgh2', 'zz'], 8)).toBe(9);
    expect(uniquePrefix(['a', 'b'], 8)).toBe(8);
  });
});
