/**
 * CSV export of a table in batches of bytes SQLite joins (export/csv-table.ts, export/csv-bytes.ts):
 * the bytes are the one-statement export's bytes (rows read as cells, written by csvLine), and every
 * row comes from one snapshot, whatever a writer commits while the batches are read.
 */

import { isUtf8 } from 'node:buffer';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { csvLine, writeCsv } from '../../../src/export/csv.js';
import { encodeBatch, maxLines } from '../../../src/export/csv-bytes.js';
import { writeCsvTable } from '../../../src/export/csv-table.js';
import { type ByteSink, FileSink } from '../../../src/export/sink.js';
import { EXPORT_TABLES, type ExportTable } from '../../../src/export/tables.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { Database } from '../../../src/store/sqlite/driver.js';
import { exportQuery, exportRangeQuery, rowIdName, withTimeFunction } from '../../../src/store/sqlite/export-sql.js';
import { columnNames } from '../../../src/store/sqlite/schema.js';
import { RangeReader, READ_CACHE_KIB } from '../../../src/store/sqlite/snapshot.js';
import { BIN, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

/** A connection as the export's own (store/sqlite/export-source.ts): times read in their normal form. */
const openExport = (path: string, opts: { readonly?: boolean } = {}) => withTimeFunction(openDatabase(path, opts));

/** The table's columns as the database has them, which the export's SELECT lists (times in their normal form). */
const PRESENT = (dbPath: string, table: ExportTable) => {
  const db = openDatabase(dbPath, { readonly: true });
  const present = columnNames(db, EXPORT_TABLES[table].table);
  db.close();
  return present;
};

const COLUMNS_OF = (dbPath: string, table: ExportTable) => {
  const db = openExport(dbPath, { readonly: true });
  const columns = db
    .prepare(exportQuery(table, { present: PRESENT(dbPath, table) }).sql)
    .columns()
    .map((c) => c.name);
  db.close();
  return columns;
};

/** Collects what an export writes; `onWrite` runs after each chunk (between two batches' reads). */
class Memory implements ByteSink {
  readonly chunks: Buffer[] = [];
  constructor(private readonly onWrite?: (index: number) => void) {}
  write(chunk: string | Uint8Array, written?: () => void): boolean {
    this.chunks.push(Buffer.from(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk)));
    written?.();
    this.onWrite?.(this.chunks.length - 1);
    return true;
  }
  async drain(): Promise<void> {}
  async end(): Promise<void> {}
  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

// Cells of every kind export must keep: quotes, commas, line breaks, formulas, non-ASCII, NUL,
// int64 at its ends, reals that JavaScript and SQLite print differently, blobs, nulls, a 200 KB cell.
const TEXTS = [
  'plain',
  'a,b',
  'say "hi"',
  'l1\nl2',
  'cr\r',
  'crlf\r\n',
  '=1+1',
  '-2',
  '+x',
  '@SUM(A1)',
  '\tx',
  'Réponse ✓ 日本語 🎉',
  'nul\0inside',
  '',
];
const SCORES = [null, 0, -0, 4.1, 2, 0.1 + 0.2, 1e21, 1.5e-7, -3.25, 123456789.123, 2 ** 53 + 2];

/** [skill_key, score, rationale, position] of the odd rows, and whether each is read again as cells. */
const ODD_ROWS: Array<[string | Buffer | null, unknown, string, unknown, boolean]> = [
  ['unit\u001fseparator', 1.5, 'in a key', 1n, true],
  ['k', 2, 'separator \u001f in a rationale, "quoted"', 2n, true],
  ['k', 'n/a', 'text score', 3n, false],
  ['k', '=1+2', 'formula score', 4n, false],
  ['k', 'a,"b"', 'quoted score', 5n, false],
  ['k', Buffer.from('blob, score'), 'blob score', 6n, true],
  ['k', 0, 'infinite', 7n, true],
  ['k', 7n, 'integer score', 2.5, false],
  ['k', null, 'text position', '-x', false],
  ['k', null, 'formula position', '=y', false],
  ['k', null, 'blob position', Buffer.from([0x61, 0xff]), true],
  ['=k', -0.0, '-rationale', null, false],
  ['row\u001eseparator', 3, 'row separator in a key', 12n, true],
  [Buffer.from([0x62, 0xff, 0x2c]), 4, 'not UTF-8 in a key', 13n, true],
  [Buffer.from('blob, key é'), 5, 'UTF-8 blob in a key', 14n, false],
  // An empty text is "" and NULL nothing: the empty one travels as U+001D alone (csv-bytes.ts EMPTY).
  ['', '', 'empty key, empty text score', 15n, false],
  [null, null, 'null key, null score', 16n, false],
  [Buffer.alloc(0), 6, 'empty blob key', 17n, false],
  ['\u001dgroup', 7, 'group separator first in a key', 18n, true],
  ['k\u001d', 8, 'group separator last in a key', 19n, false],
];

function fill(dbPath: string, rows: number): void {
  const db = openDatabase(dbPath);
  const insert = db.prepare(
    `INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, skill_label, score, score_text, rationale, evaluated_at, campaign_id, position)
     VALUES ('session_result', ?, ?, ?, ?, ?, ?, ?, '2026-01-02T03:04:05Z', ?, ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < rows; i++) {
      const text = TEXTS[i % TEXTS.length] as string;
      const position = i % 5 === 0 ? 2n ** 63n - 1n : i % 5 === 1 ? -(2n ** 63n) : BigInt(i);
      const label = i % 97 === 0 ? Buffer.from(`blob ${i}, é`) : `label ${i}`;
      const rationale = i === 1234 ? `=${'big "cell", '.repeat(20_000)}` : `${text} ${i}`;
      insert.run(`p${i}`, `e${i}`, text, label, SCORES[i % SCORES.length], text, rationale, i % 3 === 0 ? 'c1' : 'c2', position);
    }
  })();
  // Gaps in the rowids, as deleted rows leave them.
  db.prepare('DELETE FROM eval_results WHERE rowid % 50 BETWEEN 10 AND 30').run();
  // Cells a batch's bytes (export/csv-bytes.ts) cannot carry, or carry typed: the separators themselves
  // and bytes that are not UTF-8 in a text; texts, a blob, an infinity and an integer in the REAL
  // column; a real, texts and a blob in the INTEGER one.
  const odd = db.prepare(
    `INSERT INTO eval_results (parent_type, parent_id, skill_key, score, rationale, position) VALUES ('score_detail', 'odd', ?, ?, ?, ?)`,
  );
  for (const [key, score, rationale, position] of ODD_ROWS) odd.run(key, score, rationale, position);
  db.prepare("UPDATE eval_results SET score = 9e999 WHERE parent_id = 'odd' AND rationale = 'infinite'").run();
  db.close();
}

/** The export as one statement on one thread, as it was written before ranges. */
async function expected(dbPath: string, table: ExportTable, filter: { campaign?: string }, raw: boolean): Promise<Buffer> {
  const db = openExport(dbPath, { readonly: true });
  const { sql, params } = exportQuery(table, { ...filter, schema: 6, present: PRESENT(dbPath, table) });
  const stmt = db.prepare(sql).safeIntegers(true);
  const columns = stmt.columns().map((c) => c.name);
  const sink = new Memory();
  await writeCsv(columns, stmt.raw(true).iterate(...params) as IterableIterator<unknown[]>, sink, { raw });
  db.close();
  return sink.bytes;
}

/** The export's columns as better-sqlite3 describes them. */
const DESCRIBED = (dbPath: string, table: ExportTable) => {
  const db = openExport(dbPath, { readonly: true });
  const described = db.prepare(exportQuery(table, { schema: 6, present: PRESENT(dbPath, table) }).sql).columns();
  db.close();
  return described;
};

/** The export as the CLI writes it: rows read in batches of bytes, or `cells` as arrays. */
async function ranges(
  dbPath: string,
  table: ExportTable,
  filter: { campaign?: string },
  raw: boolean,
  opts: { cells?: boolean; onWrite?: (index: number) => void } = {},
) {
  const db = openExport(dbPath, { readonly: true });
  const query = exportRangeQuery(
    table,
    { ...filter, schema: 6, present: PRESENT(dbPath, table) },
    opts.cells ? undefined : DESCRIBED(dbPath, table),
  );
  expect(query.batch === undefined).toBe(opts.cells === true);
  const job = { ...query, columns: COLUMNS_OF(dbPath, table), raw };
  const sink = new Memory(opts.onWrite);
  try {
    const rows = await writeCsvTable(new RangeReader(db, job.sql, job.params, job.batch?.sql), job, sink);
    return { rows, bytes: sink.bytes, chunks: sink.chunks.length };
  } finally {
    db.close();
  }
}

const CELLS = { cells: true };
let dbPath: string;

beforeAll(() => {
  dbPath = join(tempDir(), 'ranges.db');
  fill(dbPath, 6000);
});

describe('CSV export in batches of bytes', () => {
  it('writes byte for byte what one statement read as cells writes: every cell kind, --raw-csv, a filter, a big cell', async () => {
    for (const raw of [false, true]) {
      for (const filter of [{}, { campaign: 'c1' }]) {
        const want = await expected(dbPath, 'eval-results', filter, raw);
        const batches = await ranges(dbPath, 'eval-results', filter, raw);
        expect(batches.bytes.equals(want), JSON.stringify({ raw, filter })).toBe(true);
        // Rows read as cells (a UTF-16 database, a table the batch query cannot join).
        const cells = await ranges(dbPath, 'eval-results', filter, raw, CELLS);
        expect(cells.bytes.equals(want)).toBe(true);
        expect(batches.rows).toBe(cells.rows);
      }
    }
    // Every other table, `raw` rebuilt in SQL included (empty here, the header alone).
    for (const table of ['campaigns', 'role-results', 'score-details'] as const) {
      expect((await ranges(dbPath, table, {}, false)).bytes.equals(await expected(dbPath, table, {}, false))).toBe(true);
    }
  });

  it("a batch's bytes are the lines csvLine writes from its rows' cells; a batch they cannot carry is read again as cells", () => {
    const db = openExport(dbPath, { readonly: true });
    const out = Buffer.alloc(1 << 22);
    /** The batch [from, to] as encodeBatch writes it, or undefined where the export reads it again as cells. */
    const encoded = (stmt: BetterSqlite3.Statement, typed: boolean[], raw: boolean, from: bigint, to: bigint) => {
      const [bytes, count] = stmt.get(from, to, 1_000_000) as [Buffer | null, bigint];
      if (bytes === null) return '';
      const end = isUtf8(bytes) ? encodeBatch(bytes, Number(count), typed, raw, out, 0) : -1;
      expect(end).toBeLessThanOrEqual(maxLines(bytes.length, Number(count), typed.length));
      return end < 0 ? undefined : out.toString('utf8', 0, end);
    };
    try {
      const query = exportRangeQuery(
        'eval-results',
        { schema: 6, present: PRESENT(dbPath, 'eval-results') },
        DESCRIBED(dbPath, 'eval-results'),
      );
      const batch = query.batch as NonNullable<typeof query.batch>;
      expect(batch.typed).toEqual(COLUMNS_OF(dbPath, 'eval-results').map((c) => c === 'score' || c === 'position'));
      const stmt = db.prepare(batch.sql).raw(true).safeIntegers(true);
      const rows = db
        .prepare(query.sql)
        .raw(true)
        .safeIntegers(true)
        .all(0n, 2n ** 62n) as unknown[][];
      expect(rows.length).toBeGreaterThan(3000);
      for (const raw of [false, true]) {
        // Each row on its own: its line, or read again exactly where the fixture says.
        const again: string[] = [];
        for (const row of rows) {
          const rowid = row[row.length - 1] as bigint;
          const line = encoded(stmt, batch.typed, raw, rowid, rowid);
          if (line === undefined) again.push(String(row[7]));
          else expect(line, String(rowid)).toBe(csvLine(row, raw, row.length - 1));
        }
        expect(again).toEqual(ODD_ROWS.filter((r) => r[4]).map((r) => r[2]));
        // Batches of 37 rowids (gaps included): the lines of all their rows, or read again.
        const last = rows.at(-1)?.at(-1) as bigint;
        let rereads = 0;
        for (let from = 1n; from <= last; from += 37n) {
          const to = from + 36n;
          const inside = rows.filter((r) => (r.at(-1) as bigint) >= from && (r.at(-1) as bigint) <= to);
          const lines = encoded(stmt, batch.typed, raw, from, to);
          if (lines === undefined) rereads++;
          else expect(lines, `${from}-${to}`).toBe(inside.map((r) => csvLine(r, raw, r.length - 1)).join(''));
        }
        expect(rereads).toBeGreaterThan(0);
        expect(rereads).toBeLessThanOrEqual(ODD_ROWS.filter((r) => r[4]).length);
      }
    } finally {
      db.close();
    }
    // The structure is checked byte by byte: a separator inside a cell moves a cell or a row boundary.
    const bytes = (s: string) => Buffer.from(s);
    const lines = (s: string, rows: number, typed: boolean[], raw = false) => {
      const end = encodeBatch(bytes(s), rows, typed, raw, out, 0);
      return end < 0 ? undefined : out.toString('utf8', 0, end);
    };
    const [US, RS] = ['\u001f', '\u001e'];
    expect(lines(`a${US}b${RS}c,${US}"d"`, 2, [false, false])).toBe(`a,b\r\n${csvLine(['c,', '"d"'], false)}`);
    expect(lines(`a${US}b${US}c`, 1, [false, false])).toBeUndefined();
    expect(lines(`a${US}b${RS}c`, 1, [false, false])).toBeUndefined();
    expect(lines(`a${RS}b${RS}c`, 2, [false])).toBeUndefined();
    expect(lines(`a${US}b`, 1, [false, false, false])).toBeUndefined();
    expect(lines(`integer-5${US}real2.0${US}text=x${US}null`, 1, [true, true, true, true])).toBe("-5,2,'=x,\r\n");
    expect(lines(`text=x${US}-y`, 1, [true, false], true)).toBe('=x,-y\r\n');
    expect(lines('blobxyz', 1, [true])).toBeUndefined();
    expect(lines('realInf', 1, [true])).toBeUndefined();
    expect(lines('real-Inf', 1, [true])).toBeUndefined();
    expect(lines('integer', 1, [true])).toBe('\r\n');
    expect(lines('inte', 1, [true])).toBeUndefined();
    // Every table has its batch query, `raw` rebuilt in SQL included.
    for (const table of ['campaigns', 'session-results', 'role-results', 'score-details', 'eval-results'] as const) {
      expect(exportRangeQuery(table, { schema: 6, present: PRESENT(dbPath, table) }, DESCRIBED(dbPath, table)).batch?.sql, table).toMatch(
        /group_concat\(r, char\(30\)\).*SELECT concat\(/,
      );
    }
  });

  it("a real is written as JavaScript writes the number, whatever digits SQLite's text of it has", () => {
    const db = new Database(':memory:');
    const stmt = db.prepare('SELECT CAST(concat(typeof(x), x) AS BLOB) FROM (SELECT ? AS x)').pluck();
    const out = Buffer.alloc(256);
    const bits = new DataView(new ArrayBuffer(8));
    const values: number[] = [
      0,
      -0,
      1,
      -1,
      4.1,
      0.1 + 0.2,
      1e15,
      1e16,
      1e21,
      1e-7,
      1.5e-7,
      5e-324,
      Number.MAX_VALUE,
      2 ** 53 + 2,
      1e14 + 0.5,
    ];
    values.push(123456789012345, 1234567890123456, 12345678901234568, -123.45, 99.99, 1 / 3);
    let seed = 15;
    const random = () => {
      // A small deterministic generator (mulberry32): the same values on every run.
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
    for (let i = 0; i < 20_000; i++) {
      // Any bit pattern; any magnitude; short decimals such as scores.
      bits.setUint32(0, random() * 2 ** 32);
      bits.setUint32(4, random() * 2 ** 32);
      values.push(
        bits.getFloat64(0),
        random() * 10 ** Math.floor(random() * 40 - 20),
        Math.round(random() * 1e6) / 10 ** Math.floor(random() * 8),
      );
    }
    let checked = 0;
    for (const n of values) {
      if (!Number.isFinite(n)) continue;
      const src = stmt.get(n) as Buffer;
      expect(src.subarray(0, 4).toString()).toBe('real');
      const end = encodeBatch(src, 1, [true], false, out, 0);
      expect(out.toString('latin1', 0, end), `${n} (SQLite: ${src})`).toBe(`${String(n)}\r\n`);
      checked++;
    }
    expect(checked).toBeGreaterThan(55_000);
    db.close();
  });

  it("a range reader's connection keeps a small page cache (a range is read once, front to back)", () => {
    const db = openExport(dbPath, { readonly: true });
    try {
      expect(db.pragma('cache_size', { simple: true })).not.toBe(READ_CACHE_KIB);
      const query = exportRangeQuery('eval-results', { schema: 6, present: PRESENT(dbPath, 'eval-results') });
      const reader = new RangeReader(db, query.sql, query.params);
      reader.begin();
      expect(db.pragma('cache_size', { simple: true })).toBe(READ_CACHE_KIB);
      reader.end();
    } finally {
      db.close();
    }
  });

  it('commits while the batches are read (rows changed, deleted, added) change nothing in the file', async () => {
    const path = join(tempDir(), 'during.db');
    // Several chunks of output: a writer commits after each.
    fill(path, 30_000);
    const before = await expected(path, 'eval-results', {}, false);
    const writer = openDatabase(path);
    let commits = 0;
    const commit = (index: number) => {
      commits++;
      writer.prepare('UPDATE eval_results SET rationale = ?').run(`generation ${index}`);
      writer.prepare('DELETE FROM eval_results WHERE rowid % 7 = 0').run();
      writer.prepare("INSERT INTO eval_results (parent_type, parent_id, rationale) VALUES ('session_result', 'new', 'new')").run();
    };
    const got = await ranges(path, 'eval-results', {}, false, { onWrite: commit });
    expect(commits).toBeGreaterThan(2);
    expect(got.bytes.equals(before)).toBe(true);
    // Read as cells: one statement, the same snapshot.
    const after = await expected(path, 'eval-results', {}, false);
    expect(after.equals(before)).toBe(false);
    const cells = await ranges(path, 'eval-results', {}, false, { ...CELLS, onWrite: commit });
    writer.close();
    expect(cells.bytes.equals(after)).toBe(true);
  });

  it("a campaign's rows are read by rowid range, not through the campaign's index and a sort for every range", () => {
    const db = openExport(dbPath, { readonly: true });
    try {
      // A user's index on the day (or the campaign) must not be used either: a batch's rows are joined
      // in the order SQLite visits them, which must be rowid order.
      const own = openDatabase(dbPath);
      own.exec('CREATE INDEX IF NOT EXISTS user_day ON eval_results (substr(evaluated_at, 1, 10))');
      own.close();
      const filters = [{ campaign: 'c1' }, { since: '2026-01-01' }, { campaign: 'c1', since: '2026-01-01', until: '2026-12-31' }];
      for (const [table, filter] of ['session-results', 'role-results', 'score-details', 'eval-results'].flatMap((t) =>
        filters.map((f) => [t as ExportTable, f] as const),
      )) {
        const query = exportRangeQuery(table, { ...filter, schema: 6, present: PRESENT(dbPath, table) }, DESCRIBED(dbPath, table));
        for (const [sql, binds] of [
          [query.sql, [...query.params, 0, 10]],
          [query.batch?.sql as string, [...query.params, 0, 10, 64]],
        ] as const) {
          const steps = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...binds) as Array<{ id: number; parent: number; detail: string }>;
          // The statement's own steps (a rebuilt `raw` has subqueries of its own, sorted by position);
          // the batch's: its co-routine's steps, and the scan of it, with nothing between them (no
          // sort, no temp B-tree: group_concat() takes the rows in the order the co-routine yields them).
          const top = steps.filter((r) => r.parent === 0);
          let plan = top.map((r) => r.detail);
          if (sql === query.batch?.sql) {
            expect(plan, sql).toEqual([
              expect.stringMatching(/^CO-ROUTINE \(subquery-\d+\)$/),
              expect.stringMatching(/^SCAN \(subquery-\d+\)$/),
            ]);
            plan = steps.filter((r) => r.parent === top[0]?.id).map((r) => r.detail);
          }
          expect(plan.join('; '), `${table}: ${sql}`).not.toMatch(/TEMP B-TREE|campaign|user_day|INDEX/);
          expect(plan.join('; '), table).toMatch(/INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
        }
      }
    } finally {
      db.close();
    }
  });

  it('the largest rowid (2^63 - 1) is exported like any other, on each path', async () => {
    const path = join(tempDir(), 'max.db');
    fill(path, 200);
    const db = openDatabase(path);
    db.prepare(
      "INSERT INTO eval_results (rowid, parent_type, parent_id, rationale, position) VALUES (9223372036854775807, 'session_result', 'last', 'the end, \"quoted\"', 9)",
    ).run();
    db.close();
    const want = await expected(path, 'eval-results', {}, false);
    expect(want.toString()).toContain('the end');
    for (const opts of [{}, CELLS]) {
      const got = await ranges(path, 'eval-results', {}, false, opts);
      expect(got.bytes.equals(want), JSON.stringify(opts)).toBe(true);
    }
  });

  it('a UTF-16 database is read as cells by the CLI (concat would read a blob in a TEXT column as UTF-16)', async () => {
    const path = join(tempDir(), 'utf16.db');
    const raw = new Database(path);
    raw.pragma("encoding = 'UTF-16le'");
    // The encoding is fixed when the file is first written.
    raw.exec('CREATE TABLE first (x); DROP TABLE first');
    raw.close();
    const db = openDatabase(path);
    expect(db.pragma('encoding', { simple: true })).toBe('UTF-16le');
    db.prepare("INSERT INTO campaigns (id, name, raw, seen_at) VALUES ('c1', x'68656c6c6f2c20c3a9', '{}', '2026-01-01')").run();
    db.close();
    const out = join(tempDir(), 'utf16.csv');
    const r = await runCli(['export', '--db', path, '--table', 'campaigns', '-o', out, '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out).equals(await expected(path, 'campaigns', {}, false))).toBe(true);
    expect(readFileSync(out, 'utf8')).toContain('"hello, é"');
  });

  it('the CLI writes the same bytes to a file and to stdout, over many chunks', async () => {
    const path = join(tempDir(), 'big.db');
    fill(path, 40_000);
    const want = await expected(path, 'eval-results', {}, false);
    const out = join(tempDir(), 'e.csv');
    const r = await runCli(['export', '--db', path, '--table', 'eval-results', '-o', out, '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out).equals(want)).toBe(true);
    const child = spawn(process.execPath, [BIN, 'export', '--db', path, '--table', 'eval-results'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(Buffer.concat(chunks).equals(want)).toBe(true);
  });
});

describe('the file sink', () => {
  it("syncs in the background every 8 MB, and end() throws that sync's error (reported once by the kernel, never lost)", async () => {
    // /dev/null takes writes but not fdatasync (EINVAL): the background sync's failure must surface.
    const fd = openSync('/dev/null', 'w');
    try {
      const sink = new FileSink(fd);
      const chunk = Buffer.alloc(1 << 20, 120);
      for (let i = 0; i < 7; i++) sink.write(chunk);
      await expect(sink.end()).resolves.toBeUndefined();
      for (let i = 0; i < 2; i++) sink.write(chunk);
      await expect(sink.end()).rejects.toMatchObject({ code: 'EINVAL' });
      await sink.settle();
    } finally {
      closeSync(fd);
    }
  });
});

describe("an analyst's own column named rowid, _rowid_ or oid (SQLite then reaches the row id by another name, or none)", () => {
  it('every row is exported once, in row id order, with the column as its own values, in CSV (batches or row by row) and NDJSON', async () => {
    const { parse } = await import('csv-parse/sync');
    const path = join(tempDir(), 'shadowed.db');
    fill(path, 3000);
    const exportCsv = async () => {
      const out = join(tempDir(), `shadowed-${Math.random()}.csv`);
      const r = await runCli(['export', '--db', path, '--table', 'eval-results', '-o', out, '--quiet']);
      expect(r.code, r.stderr).toBe(0);
      return parse(readFileSync(out), { relax_quotes: false }) as string[][];
    };
    const exportIds = async () => {
      const out = join(tempDir(), `shadowed-${Math.random()}.ndjson`);
      const r = await runCli(['export', '--db', path, '--table', 'eval-results', '--format', 'ndjson', '-o', out, '--quiet']);
      expect(r.code, r.stderr).toBe(0);
      return readFileSync(out, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => `${JSON.parse(line).parent_id}/${JSON.parse(line).evaluation_id}`);
    };
    const before = await exportCsv();
    const idsBefore = await exportIds();
    expect(before.length).toBeGreaterThan(1500);
    // Values that run against the row ids (ordered by them, the rows would come backwards) and texts
    // that are not numbers at all (read as a row id, they broke the export: "Cannot mix BigInt").
    // `from` is the real row id while a name reaches it, then the first shadowing column's copy of it.
    const shadow = (column: string, type: string, from: string) => {
      const db = new Database(path);
      try {
        db.exec(`ALTER TABLE eval_results ADD COLUMN ${column} ${type}`);
      } catch (err) {
        // SQLite 3.54 (better-sqlite3 13, on Node 24) refuses a column named like the row id through
        // ALTER, not in CREATE TABLE: the table is rebuilt with it, rows inserted in row id order
        // (the row ids stay 1..n, as this table's are), its indexes made again.
        if (!/cannot add rowid alias/.test(String(err))) throw err;
        const names = (db.pragma('table_info(eval_results)') as Array<{ name: string }>).map((c) => c.name);
        const rowid = rowIdName(names) as string;
        const table = db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'eval_results'").pluck().get() as string;
        const indexes = db
          .prepare("SELECT sql FROM sqlite_schema WHERE tbl_name = 'eval_results' AND type = 'index' AND sql IS NOT NULL")
          .pluck()
          .all() as string[];
        const list = names.map((n) => `"${n}"`).join(', ');
        // The views name eval_results: without the legacy rule, the rename checks them while it is gone.
        db.pragma('legacy_alter_table = ON');
        db.transaction(() => {
          db.exec(`${table.replace(/eval_results/, 'eval_results_rebuilt').replace(/\)\s*$/, `, ${column} ${type})`)}`);
          db.exec(`INSERT INTO eval_results_rebuilt (${list}) SELECT ${list} FROM eval_results ORDER BY ${rowid}`);
          db.exec('DROP TABLE eval_results');
          db.exec('ALTER TABLE eval_results_rebuilt RENAME TO eval_results');
          for (const index of indexes) db.exec(index);
        })();
      }
      db.exec(`UPDATE eval_results SET ${column} = CASE WHEN ${from} % 7 = 0 THEN 'text ' || ${from} ELSE 1000000 - ${from} END`);
      db.close();
    };
    const columnValues = (column: string) => {
      const db = new Database(path, { readonly: true });
      // The table's own order: no ORDER BY can name the row id once all three names are taken.
      const values = db.prepare(`SELECT ${column} FROM eval_results`).pluck().all();
      db.close();
      return values.map((v) => (v === null ? '' : String(v)));
    };
    shadow('RowId', 'TEXT', '_rowid_');
    const one = await exportCsv();
    expect(one[0]).toEqual([...(before[0] as string[]), 'RowId']);
    expect(one.length).toBe(before.length);
    expect(one.map((row) => row.slice(0, -1))).toEqual(before);
    expect(one.slice(1).map((row) => row.at(-1))).toEqual(columnValues('RowId'));
    expect(await exportIds()).toEqual(idsBefore);

    shadow('_ROWID_', 'INTEGER', 'oid');
    shadow('oid', '', 'RowId');
    const three = await exportCsv();
    expect(three[0]).toEqual([...(before[0] as string[]), 'RowId', '_ROWID_', 'oid']);
    expect(three.map((row) => row.slice(0, -3))).toEqual(before);
    expect(three.slice(1).map((row) => row.at(-1))).toEqual(columnValues('oid'));
    expect(three.slice(1).map((row) => row.at(-2))).toEqual(columnValues('_ROWID_'));
    expect(new Set(columnValues('_ROWID_')).size).toBe(three.length - 1);
    expect(await exportIds()).toEqual(idsBefore);
  });

  it('rowIdName takes the first name no column has, whatever its case', () => {
    expect(rowIdName(['id', 'raw'])).toBe('rowid');
    expect(rowIdName(['id', 'ROWID'])).toBe('_rowid_');
    expect(rowIdName(['rowid', '_Rowid_'])).toBe('oid');
    expect(rowIdName(['rowid', '_rowid_', 'OID'])).toBeNull();
  });
});
