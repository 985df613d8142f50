/**
 * A SQLite mirror's stored times leave in their normal form (store/model/times.ts) on every path of
 * the export: the SELECT read row by row, and the CSV batches SQLite joins into bytes.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalTime } from '../../../src/store/model/times.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { exportQuery, withTimeFunction } from '../../../src/store/sqlite/export-sql.js';
import { columnNames } from '../../../src/store/sqlite/schema.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const FORMS = [
  '2026-03-01T10:00:00.123Z',
  '2026-03-01T10:00:00Z',
  '2026-03-01T12:00:00.123457+02:00',
  '2026-03-01T04:30:00.123456789-05:30',
  '2026-03-01T10:00:00',
  '2026-03-01 10:00:00.0004',
  '2026-03-01t10:00:00.123z',
  '2026-03-01T12:00+0200',
  '2026-03-01',
  '2026-02-30T10:00:00.000Z',
  '2026-03-01T24:00:00.000Z',
  '0000-01-01T00:00:00.000Z',
  'last Tuesday',
  '',
  null,
];

describe('times in their normal form on every path of a SQLite export', () => {
  it('the SELECT and the CSV batches give what normalTime gives, a value that is no time as NULL', async () => {
    const path = join(tempDir(), 'times.db');
    const db = openDatabase(path);
    const insert = db.prepare("INSERT INTO campaigns (id, name, created_at, raw, seen_at) VALUES (?, 'n', ?, '{}', ?)");
    for (const [i, t] of FORMS.entries()) insert.run(`c${String(i).padStart(2, '0')}`, t, t);
    db.close();
    const want = FORMS.map((t) => normalTime(t));
    const read = withTimeFunction(openDatabase(path, { readonly: true }));
    try {
      const { sql } = exportQuery('campaigns', { present: columnNames(read, 'campaigns') });
      const rows = read.prepare(sql).all() as Array<{ created_at: string | null; seen_at: string | null }>;
      expect(rows.map((r) => r.created_at)).toEqual(want);
      expect(rows.map((r) => r.seen_at)).toEqual(want);
    } finally {
      read.close();
    }
    const csv = await runCli(['export', '--db', path, '--table', 'campaigns', '--columns', 'created_at,seen_at']);
    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.split('\r\n').slice(1, -1)).toEqual(want.map((t) => `${t ?? ''},${t ?? ''}`));
  });
});
