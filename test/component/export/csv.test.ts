import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { csvLine } from '../../../src/export/csv.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { parseStrictCsv } from '../../helpers/csv.js';
import { BIN, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

let dbPath: string;
// Bigger than the encoder's 2 MB buffer even as UTF-16, full of quotes, commas, line breaks and non-ASCII.
const HUGE = `=${'say "hi", then\r\nRéponse ✓ 日本語 🎉 '.repeat(120_000)}`;

beforeAll(() => {
  dbPath = join(tempDir(), 'm.db');
  const db = openDatabase(dbPath);
  const insert = db.prepare(
    `INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, score, rationale, evaluated_at, campaign_id)
     VALUES ('session_result', ?, ?, 'K', ?, ?, '2026-01-01T00:00:00Z', 'c')`,
  );
  db.transaction(() => {
    for (let i = 0; i < 50_000; i++) insert.run(`p${i}`, `e${i}`, i % 7 === 0 ? null : i / 8, i === 20_000 ? HUGE : `row ${i}, "quoted"`);
  })();
  db.close();
});

describe('CSV encoder (export/csv.ts)', () => {
  it('writes a line per row: quotes doubled, any line break or comma quoted, formulas neutralised, numbers as written', () => {
    expect(csvLine(['a', 'b,c', 'say "x"', 'l1\nl2', 'cr\r', '', null, 3.5, 2n ** 63n - 1n, '=1+1', '-2', 7], false)).toBe(
      `a,"b,c","say ""x""","l1\nl2","cr\r","",,3.5,9223372036854775807,'=1+1,'-2,7\r\n`,
    );
    expect(csvLine(['=1+1', '@x', '\tx', '+1'], true)).toBe('=1+1,@x,\tx,+1\r\n');
    expect(csvLine(['\r=cmd'], false)).toBe(`"'\r=cmd"\r\n`);
  });

  it('a cell bigger than a chunk and rows across many chunks read back exactly', async () => {
    const out = join(tempDir(), 'e.csv');
    const r = await runCli(['export', '--db', dbPath, '--table', 'eval-results', '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const rows = parseStrictCsv(readFileSync(out, 'utf8'));
    expect(rows.length).toBe(50_001);
    const rationale = (rows[0] as string[]).indexOf('rationale');
    const score = (rows[0] as string[]).indexOf('score');
    expect(rows[20_001]?.[rationale]).toBe(`'${HUGE}`);
    expect(rows[20_002]?.[rationale]).toBe('row 20001, "quoted"');
    expect(rows[50_000]?.[rationale]).toBe('row 49999, "quoted"');
    expect(rows[2]?.[score]).toBe('0.125');
    expect(rows[8]?.[score]).toBe('');
    expect(rows[1]?.[score]).toBe('');
  });

  it('a reader that stops early (`| head`) ends the export quietly with exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'export', '--db', dbPath, '--table', 'eval-results'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += String(c);
    });
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
