/**
 * DETAILED role results stored once, on every kind with tables (./mirrors.ts says how to add a case):
 * a record's score details and their eval results are rows of their own, taken out of the raw they
 * came in, and every record comes back whole through role_results_full as the service sent it.
 * Each backend's own shapes and upgrades are test/component/store/{sqlite,pg}/compact.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { parseJson, toJson } from '../../src/core/json.js';
import { servedRecords, sim } from '../helpers/index.js';
import { MIRRORS, open, unsupported } from './mirrors.js';

const RECORDS = 150;

describe.each(MIRRORS)('DETAILED records stored once (%s)', (kind) => {
  it('a pull stores each DETAILED record once and rebuilds every one as served, int64 included', async (ctx) => {
    if (unsupported(kind, 'sql', ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS, orderIndexStart: 9007199254740993n });
    const m = open(kind);
    const r = await m.run(s, 'pull', '--type', 'role', '--page-size', '25');
    expect(r.code, r.stderr).toBe(0);
    const served = servedRecords(s, RECORDS);
    const rows = (await m.sql('SELECT id, CAST(raw AS TEXT) AS raw FROM role_results_full')) as Array<{ id: string; raw: string }>;
    expect(rows).toHaveLength(RECORDS);
    for (const row of rows) {
      const sent = served.get(row.id) as string;
      // SQLite keeps the text byte for byte; PostgreSQL's jsonb keeps the value (its own key order and spacing).
      if (kind === 'sqlite') expect(row.raw, row.id).toBe(sent);
      else expect(parseJson(row.raw), row.id).toEqual(parseJson(sent));
    }
    expect(rows.some((x) => /"order_index": ?9007199254741\d{3}/.test(x.raw))).toBe(true);
    // Stored once: the record's own row and each score detail's keep none of what was taken out.
    const stored = (await m.sql('SELECT CAST(raw AS TEXT) AS raw FROM role_results')).map((x) => parseJson(String(x.raw)));
    expect(stored).toHaveLength(RECORDS);
    expect(stored.filter((x) => toJson((x as { score_details: unknown }).score_details) !== '[]')).toEqual([]);
    const details = (await m.sql('SELECT CAST(raw AS TEXT) AS raw FROM score_details')).map((x) => parseJson(String(x.raw)));
    expect(details.length).toBeGreaterThan(0);
    expect(details.filter((x) => toJson((x as { eval_results: unknown }).eval_results) !== '[]')).toEqual([]);
  });
});
