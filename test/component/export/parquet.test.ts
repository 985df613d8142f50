import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { readParquet } from 'parquet-wasm/node';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportTable } from '../../../src/commands/export.js';
import { resolveSettings } from '../../../src/config/settings.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { BIN, sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

let dbPath: string;
let dir: string;
const TABLES = {
  campaigns: 'campaigns',
  'session-results': 'session_results',
  'role-results': 'role_results',
  'score-details': 'score_details',
  'eval-results': 'eval_results',
} as const;
const UNICODE = 'Réponse ✓ 日本語 🎉 "q", \r\n\u2028';

interface Column {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

function columnsOf(table: string): Column[] {
  const db = openDatabase(dbPath, { readonly: true });
  const cols = db.prepare(`SELECT name, type, "notnull", pk FROM pragma_table_info('${table}')`).all() as Column[];
  db.close();
  return cols;
}

beforeAll(async () => {
  const s = await sim({ campaigns: 4, records: 40, orderIndexStart: 2n ** 62n + 1n });
  dir = tempDir();
  dbPath = join(dir, 'm.db');
  const r = await runCli(['pull', '--db', dbPath], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
  expect(r.code).toBe(0);
  const db = openDatabase(dbPath);
  // A null in every nullable column of every table (the key aside: SQLite lets a TEXT key be null), each on its own row.
  for (const table of Object.values(TABLES)) {
    columnsOf(table)
      .filter((c) => c.notnull === 0 && c.pk === 0)
      .forEach((c, i) => {
        db.prepare(`UPDATE ${table} SET "${c.name}" = NULL WHERE rowid = ?`).run(i + 2);
      });
  }
  db.prepare('UPDATE session_results SET scenario_name = ?, user_email = ? WHERE rowid = 1').run(UNICODE, '=1+1');
  db.prepare('UPDATE eval_results SET rationale = ? WHERE rowid = 1').run(UNICODE);
  // Timestamps: microseconds and an offset, no zone (read as UTC), and text that is no timestamp.
  db.prepare("UPDATE session_results SET created_at = '2026-01-05T09:30:00.123456+02:00' WHERE rowid = 30").run();
  db.prepare("UPDATE session_results SET updated_at = '2026-01-05T09:30:00.5' WHERE rowid = 30").run();
  db.prepare("UPDATE session_results SET created_at = 'last Tuesday' WHERE rowid = 31").run();
  db.close();
});

/** Independent of src/export/timestamp.ts: Date.parse for the milliseconds, the digits after them by hand. */
function micros(text: string): bigint | null {
  const zoned = /(Z|[+-]\d\d:\d\d)$/.test(text) ? text : `${text}Z`;
  const ms = Date.parse(zoned);
  if (Number.isNaN(ms) || !/^\d{4}-\d\d-\d\dT/.test(text)) return null;
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  return BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, '0').slice(3, 6));
}

/** The table's rows as Parquet must hold them: int64 as bigint, timestamps as UTC microseconds, text as stored. */
function expectedRows(table: string): Record<string, unknown>[] {
  const db = openDatabase(dbPath, { readonly: true });
  // DETAILED records are stored once (schema 6): export gives their raw as the service sent it.
  const sql = ['role_results', 'score_details'].includes(table)
    ? `SELECT f.* FROM ${table} t JOIN ${table}_full f ON f.id = t.id ORDER BY t.rowid`
    : `SELECT * FROM ${table} ORDER BY rowid`;
  const stmt = db.prepare(sql).safeIntegers(true);
  // Exports leave out the mirror's change numbers (store/sqlite/changes.ts).
  const names = stmt
    .columns()
    .map((c) => c.name)
    .filter((n) => n !== 'change_seq');
  const rows = stmt.all() as Record<string, unknown>[];
  db.close();
  const types = new Map(columnsOf(table).map((c) => [c.name, c.type]));
  const cols = names.map((name) => ({ name, type: types.get(name) ?? 'TEXT' }));
  return rows.map((row) =>
    Object.fromEntries(
      cols.map((c) => {
        const v = row[c.name];
        if (v === null) return [c.name, null];
        if (c.type === 'REAL') return [c.name, Number(v)];
        if (c.name.endsWith('_at')) return [c.name, micros(v as string)];
        return [c.name, v];
      }),
    ),
  );
}

const exact = { timestampFromMicroseconds: (m: bigint) => m };

async function readHyparquet(bytes: Buffer): Promise<Record<string, unknown>[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return (await parquetReadObjects({ file, parsers: exact })) as Record<string, unknown>[];
}

/** parquet-wasm (Rust's arrow-rs) into apache-arrow: a second reader that shares no code with the writer. */
function readArrow(bytes: Buffer) {
  return tableFromIPC(readParquet(new Uint8Array(bytes)).intoIPCStream());
}

async function exportParquet(name: string, extra: string[] = []) {
  const out = join(tempDir(), `${name}.parquet`);
  const r = await runCli(['export', '--db', dbPath, '--table', name, '--format', 'parquet', '-o', out, ...extra]);
  return { r, out };
}

describe('export --format parquet', () => {
  it('every table reads back row by row as the database holds it, in hyparquet and in parquet-wasm + arrow', async () => {
    for (const [name, table] of Object.entries(TABLES)) {
      const { r, out } = await exportParquet(name);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect((statSync(out).mode & 0o777).toString(8)).toBe('600');
      expect(readdirSync(join(out, '..'))).toEqual([`${name}.parquet`]);
      const expected = expectedRows(table);
      expect(expected.length).toBeGreaterThan(1);
      const bytes = readFileSync(out);
      const rows = await readHyparquet(bytes);
      expect(rows.length, name).toBe(expected.length);
      rows.forEach((row, i) => {
        expect(row, `${name} row ${i}`).toEqual(expected[i]);
      });

      const arrow = readArrow(bytes);
      expect(arrow.numRows).toBe(expected.length);
      for (const c of Object.keys(expected[0] as object).map((name) => ({ name }))) {
        const vector = arrow.getChild(c.name);
        expect(vector, c.name).not.toBeNull();
        const values = vector?.toArray() as ArrayLike<unknown>;
        for (let i = 0; i < expected.length; i++) {
          const want = (expected[i] as Record<string, unknown>)[c.name];
          const got = vector?.get(i);
          const where = `${name}.${c.name} row ${i}`;
          if (want === null) expect(got, where).toBeNull();
          // apache-arrow gives timestamps in (fractional) milliseconds.
          else if (c.name.endsWith('_at')) expect(got, where).toBeCloseTo(Number(want as bigint) / 1000, 3);
          else expect(got, where).toEqual(want);
        }
        expect(values.length).toBe(expected.length);
      }
    }
  });

  it('types each column: INT64 order_index exact past 2^53, UTC microsecond timestamps, DOUBLE scores, UTF-8 text and JSON', async () => {
    const { out } = await exportParquet('session-results');
    const bytes = readFileSync(out);
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    const schema = Object.fromEntries(meta.schema.slice(1).map((e) => [e.name, e]));
    expect(schema.order_index).toMatchObject({ type: 'INT64', repetition_type: 'OPTIONAL' });
    expect(schema.score).toMatchObject({ type: 'DOUBLE' });
    expect(schema.created_at).toMatchObject({
      type: 'INT64',
      logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
    });
    for (const text of ['raw', 'feedback', 'additional_scores', 'user_email']) {
      expect(schema[text], text).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    }
    const rows = await readHyparquet(bytes);
    const big = rows.map((r) => r.order_index as bigint);
    expect(big.every((v) => typeof v === 'bigint' && v > 2n ** 53n)).toBe(true);
    expect(big[0]).toBe(expectedRows('session_results')[0]?.order_index);
    expect(rows[0]?.scenario_name).toBe(UNICODE);
    // Parquet holds values as stored: no formula prefix (that is CSV's concern).
    expect(rows[0]?.user_email).toBe('=1+1');
    // 09:30:00.123456 at +02:00 is 07:30:00.123456 UTC; a time with no zone is read as UTC.
    expect(rows[29]?.created_at).toBe(BigInt(Date.UTC(2026, 0, 5, 7, 30)) * 1000n + 123_456n);
    expect(rows[29]?.updated_at).toBe(BigInt(Date.UTC(2026, 0, 5, 9, 30, 0, 500)) * 1000n);
    const arrow = readArrow(bytes);
    expect(String(arrow.schema.fields.find((f) => f.name === 'created_at')?.type)).toBe('Timestamp<MICROSECOND, UTC>');
    expect(String(arrow.schema.fields.find((f) => f.name === 'order_index')?.type)).toBe('Int64');
  });

  it('a value in a time column that is no timestamp is null, as in CSV and on PostgreSQL (raw keeps it)', async () => {
    const { r, out } = await exportParquet('session-results');
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/warning/);
    const rows = await readHyparquet(readFileSync(out));
    expect(rows[30]?.created_at).toBeNull();
    const csv = await runCli(['export', '--db', dbPath, '--table', 'session-results', '--columns', 'created_at,id']);
    expect(csv.stdout.split('\r\n')[31]).toMatch(/^,[^,]+$/);
    const quiet = await exportParquet('session-results', ['--quiet']);
    expect(quiet.r.stderr).toBe('');
  });

  it('an empty selection is a valid file with the schema and no rows', async () => {
    const { r, out } = await exportParquet('role-results', ['--since', '2100-01-01', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ table: 'role-results', format: 'parquet', rows: 0 });
    const bytes = readFileSync(out);
    expect(await readHyparquet(bytes)).toEqual([]);
    const arrow = readArrow(bytes);
    expect(arrow.numRows).toBe(0);
    expect(arrow.schema.fields.map((f) => f.name)).toEqual(Object.keys(expectedRows('role_results')[0] as object));
  });

  it('goes to stdout through a pipe, and refuses a terminal (exit 2) before any work', async () => {
    const child = spawn(process.execPath, [BIN, 'export', '--db', dbPath, '--table', 'eval-results', '--format', 'parquet'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    const rows = await readHyparquet(Buffer.concat(chunks));
    expect(rows).toEqual(expectedRows('eval_results'));

    const terminal = Object.assign(
      new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
      { isTTY: true },
    );
    await expect(
      exportTable(resolveSettings('export', { db: dbPath, table: 'eval-results', format: 'parquet' }), terminal),
    ).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/binary.*-o <file>/),
    });
  });

  it('a write failure exits 74 with one line and leaves no partial file', async () => {
    const d = tempDir();
    const missing = await runCli(['export', '--db', dbPath, '--table', 'role-results', '--format', 'parquet', '-o', 'nodir/x.parquet'], {
      cwd: d,
    });
    expect(missing.code).toBe(74);
    expect(missing.stderr).toMatch(/^campaign-sync: cannot write nodir\/x\.parquet: no such file or folder/);
    expect(missing.stderr.trim().split('\n').length).toBe(1);
    // A file size limit of 64 KiB: write(2) fails with EFBIG part-way (Node ignores SIGXFSZ), as a full disk would with ENOSPC.
    const out = join(d, 'big.parquet');
    const child = spawn(
      'sh',
      [
        '-c',
        `ulimit -f 64; exec "${process.execPath}" "${BIN}" "$@"`,
        'sh',
        'export',
        '--db',
        dbPath,
        '--table',
        'role-results',
        '--format',
        'parquet',
        '-o',
        out,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += String(c);
    });
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(74);
    expect(stderr).toMatch(new RegExp(`^campaign-sync: cannot write ${out}`));
    expect(stderr.trim().split('\n').length).toBe(1);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(d)).toEqual([]);
  });
});
