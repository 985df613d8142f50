/**
 * export in flat memory (the slow project): a million-row CSV export and a 400,000-row Parquet export,
 * each a spawned CLI whose peak RSS is read while it runs. Apart from export.test.ts so that the two
 * files, each half a minute or more, run on two workers side by side.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { peakRssMb } from '../../../bench/peak-rss.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { BIN, tempDir } from '../../helpers/index.js';

/** A database of `rows` eval results; written without a journal or fsync: a fixture, not a mirror under test. */
function bigDatabase(path: string, rows: number): void {
  const db = openDatabase(path);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
      INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, skill_label, score, score_text, rationale, evaluated_at, campaign_id)
      SELECT 'session_result', 'p' || i, 'e' || i, 'JUDGMENT', 'Judgment', 3.5, '3.5', 'Rationale, with "quotes" and
a newline, row ' || i, '2026-01-01T00:00:00Z', 'c' FROM n`);
  db.close();
}

describe('export in flat memory', () => {
  it('exports 1,000,000 rows in flat memory', async () => {
    const big = join(tempDir(), 'big.db');
    bigDatabase(big, 1_000_000);
    const child = spawn(process.execPath, [BIN, 'export', '--db', big, '--table', 'eval-results'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const peakMb = await peakRssMb(child);
    expect(peakMb).toBeGreaterThan(0);
    // Node 24's V8 grows the young generation to a larger ceiling: the same export measured 121 MB at
    // 100k rows, 224 MB at 1M and 224 MB at 3M (flat: no leak), and 106 MB with
    // --max-semi-space-size=8. Node 20 and 22 stay near 110 MB.
    const limitMb = Number(process.versions.node.split('.')[0]) >= 24 ? 256 : 150;
    expect(peakMb).toBeLessThan(limitMb);
  }, 120_000);

  it('exports Parquet in row groups in flat memory: 400,000 rows in 40 groups of 10,000', async () => {
    const d = tempDir();
    const big = join(d, 'big.db');
    bigDatabase(big, 400_000);
    const out = join(d, 'big.parquet');
    const child = spawn(
      process.execPath,
      [BIN, 'export', '--db', big, '--table', 'eval-results', '--format', 'parquet', '-o', out, '--quiet'],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const peakMb = await peakRssMb(child);
    const bytes = readFileSync(out);
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    expect(meta.num_rows).toBe(400_000n);
    expect(meta.row_groups.map((g) => g.num_rows)).toEqual(Array(40).fill(10_000n));
    // Measured 172 MB on Node 20; 175,000 real eval rows took 180 MB and 100,000 DETAILED role results
    // (4 KB of raw each) 228 MB: one row group and V8's slack, not the table.
    const limitMb = Number(process.versions.node.split('.')[0]) >= 24 ? 320 : 240;
    expect(peakMb).toBeLessThan(limitMb);
  }, 180_000);
});
