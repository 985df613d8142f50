/**
 * How CSV export sizes its batches (export/csv-bytes.ts): from the last batch's bytes per row, down to
 * one row when rows are big (a batch's blob and its lines are in memory at once), and a batch SQLite
 * cannot join (SQLITE_TOOBIG, past its 1 GB limit; 1 MB in this fake) is read again with fewer rows,
 * a lone row from its cells. The bytes are csvLine's for every row, whatever the batches were.
 */
import { describe, expect, it } from 'vitest';
import { csvLine, Encoder } from '../../../src/export/csv.js';
import { CELL, EMPTY, ROW, rangeEncoder } from '../../../src/export/csv-bytes.js';
import type { RangeReader } from '../../../src/store/sqlite/snapshot.js';

const TOO_BIG = 1_000_000;

/**
 * A RangeReader over rows of text cells (the rowid last), recording each batch's row limit. Like
 * better-sqlite3, it refuses to iterate the rows' statement again while an iterator of it is open (not
 * run to its end nor returned): "This statement is busy executing a query".
 */
function fakeReader(rows: unknown[][]) {
  const limits: number[] = [];
  let cellReads = 0;
  let iterating = false;
  const idle = () => {
    if (iterating) throw new TypeError('This statement is busy executing a query');
  };
  const refused: number[] = [];
  const within = (lo: bigint, hi: bigint) => rows.filter((r) => (r.at(-1) as bigint) >= lo && (r.at(-1) as bigint) < hi);
  const reader = {
    hasBatches: true,
    batch(from: bigint, to: bigint, limit: number) {
      limits.push(limit);
      const picked = within(from, to + 1n).slice(0, limit);
      if (picked.length === 0) return { bytes: null, rows: 0, last: null };
      // As batchQuery joins them: an empty text is EMPTY alone.
      const cells = (r: unknown[]) => r.slice(0, -1).map((c) => (c === '' ? String.fromCharCode(EMPTY) : c));
      const text = picked.map((r) => cells(r).join(String.fromCharCode(CELL))).join(String.fromCharCode(ROW));
      if (text.length > TOO_BIG) {
        refused.push(limits.length - 1);
        throw Object.assign(new Error('string or blob too big'), { code: 'SQLITE_TOOBIG' });
      }
      return { bytes: Buffer.from(text), rows: picked.length, last: picked.at(-1)?.at(-1) as bigint };
    },
    rows(lo: bigint, hi: bigint) {
      idle();
      cellReads++;
      iterating = true;
      const inner = within(lo, hi)[Symbol.iterator]();
      const done = () => {
        iterating = false;
        return { done: true as const, value: undefined };
      };
      const it: IterableIterator<unknown[]> = {
        next: () => {
          const next = inner.next();
          if (next.done) return done();
          return next;
        },
        return: done,
        [Symbol.iterator]: () => it,
      };
      return it;
    },
  };
  return { reader: reader as unknown as RangeReader, limits, cellReads: () => cellReads, refused };
}

function encodeAll(reader: RangeReader, lo: bigint, hi: bigint): string {
  const chunks: Buffer[] = [];
  const sink = {
    write: (chunk: string | Uint8Array) => chunks.push(Buffer.from(chunk)) > 0,
    drain: async () => {},
    end: async () => {},
  };
  const enc = new Encoder(sink);
  const ranged = rangeEncoder(reader, lo, hi, { batch: { typed: [false, false] }, raw: false });
  for (;;) {
    const step = ranged.step(enc);
    enc.flush();
    if (step.done) break;
  }
  return Buffer.concat(chunks).toString();
}

describe('CSV batches', () => {
  it('shrink to one row when rows are big, read a batch too big for SQLite again with fewer rows, and a lone row from its cells', () => {
    const rows: unknown[][] = [];
    let id = 1n;
    for (let i = 0; i < 200; i++) rows.push([`small ${i}`, 'x, "y"', id++]);
    for (let i = 0; i < 30; i++) rows.push([`big ${i}`, 'b'.repeat(300_000), id++]);
    rows.push(['huge', 'h'.repeat(1_500_000), id++]);
    rows.push(['huge again', 'g'.repeat(1_200_000), id++]);
    for (let i = 0; i < 10; i++) rows.push([`after ${i}`, '', (id += 5n)]);
    const { reader, limits, cellReads, refused } = fakeReader(rows);
    const got = encodeAll(reader, 1n, id + 1n);
    // The first batch knows nothing of the rows: one row.
    expect(limits[0]).toBe(1);
    expect(got).toBe(rows.map((r) => csvLine(r, false, r.length - 1)).join(''));
    // Grown at most twice per batch, halved on SQLITE_TOOBIG, one row at a time among the big rows.
    for (let i = 1; i < limits.length; i++) expect(limits[i] as number).toBeLessThanOrEqual(2 * (limits[i - 1] as number));
    expect(limits).toContain(1);
    expect(Math.max(...limits)).toBeLessThanOrEqual(4096);
    // Each huge row alone, from its cells (the statement free again for the second). A batch SQLite
    // refused (each refusal costs SQLite up to 1 GB of work) is read again as one row at once, not
    // halved try after try; a lone row refused is read from its cells.
    expect(cellReads()).toBe(2);
    expect(refused.length).toBeGreaterThan(1);
    for (const i of refused) {
      if ((limits[i] as number) > 1) expect(limits[i + 1], `after batch ${i}`).toBe(1);
    }
    expect(refused.filter((i) => limits[i] === 1).length).toBe(2);
    // Big rows from the start: one row per batch, nothing refused.
    const big: unknown[][] = [];
    for (let i = 1n; i <= 5n; i++) big.push([`big ${i}`, 'b'.repeat(400_000), i]);
    const only = fakeReader(big);
    expect(encodeAll(only.reader, 1n, 6n)).toBe(big.map((r) => csvLine(r, false, 2)).join(''));
    expect(only.refused).toEqual([]);
    expect(only.limits).toEqual([1, 1, 1, 1, 1]);
  });

  it('a range with no rows, or rowids far apart (up to 2^63 - 1), costs one query per batch of rows, not per rowid', () => {
    const rows: unknown[][] = [
      ['a', 'b', 1n],
      ['c', 'd', 2n ** 62n],
      ['e', 'f', 2n ** 63n - 1n],
    ];
    const { reader, limits } = fakeReader(rows);
    expect(encodeAll(reader, 1n, 2n ** 63n)).toBe('a,b\r\nc,d\r\ne,f\r\n');
    // A first batch of one row, then one of two: two queries for a span of 2^63 rowids.
    expect(limits).toEqual([1, 2]);
    const empty = fakeReader([]);
    expect(encodeAll(empty.reader, 1n, 2n ** 63n)).toBe('');
    expect(empty.limits.length).toBe(1);
  });
});

describe('the encoder and lines too big for its buffer', () => {
  it('counts them towards a full chunk and passes on the sink’s wait, so a caller’s turn comes every chunk', () => {
    const chunks: number[] = [];
    const sink = {
      write(chunk: string | Uint8Array) {
        chunks.push(chunk.length);
        return false; // a pipe whose reader is slow
      },
      async drain() {},
      async end() {},
    };
    const enc = new Encoder(sink);
    enc.line('small,row\r\n');
    expect(enc.full).toBe(false);
    enc.line(`${'x'.repeat(3 << 20)}\r\n`);
    // Handed on at once (after the small line), and the caller must now flush and wait for the sink.
    expect(chunks).toEqual([11, (3 << 20) + 2]);
    expect(enc.full).toBe(true);
    expect(enc.flush()).toBe(false);
    expect(enc.full).toBe(false);
    // Nothing written since: nothing to wait for.
    expect(enc.flush()).toBe(true);
  });
});
