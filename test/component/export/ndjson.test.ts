/**
 * NDJSON export builds each line cell by cell (export/writers.ts): the text must be what
 * `toJson` of the whole row object gave before, JSON columns embedded, int64 exact.
 */
import { describe, expect, it } from 'vitest';
import { parseJson, toJson } from '../../../src/core/json.js';
import type { ByteSink } from '../../../src/export/sink.js';
import { ndjsonLine, writeNdjson } from '../../../src/export/writers.js';

/** The reference line, made the plain way: the row as an object, JSON columns parsed, then toJson. */
function wholeRow(columns: string[], row: unknown[]): string {
  const out: Record<string, unknown> = {};
  columns.forEach((key, i) => {
    const v = row[i];
    let value = v;
    // A blob is the base64 of its bytes, in any column.
    if (v instanceof Uint8Array) value = Buffer.from(v).toString('base64');
    else if (['raw', 'feedback', 'additional_scores'].includes(key) && typeof v === 'string') {
      try {
        value = parseJson(v);
      } catch {
        value = v;
      }
    }
    out[key] = value;
  });
  return `${toJson(out)}\n`;
}

const COLUMNS = ['id', 'raw', 'score', 'position', 'note', 'feedback', 'blob'];
const ROWS: unknown[][] = [
  ['a', '{"x":1,"big":9223372036854775807,"s":"é"}', 4.1, 2n ** 63n - 1n, 'say "hi"\n\t\u2028', null, null],
  ['b', 'not json {', 0.30000000000000004, -(2n ** 63n), '\ud800 lone', '[1,2,{"k":null}]', Buffer.from('xy')],
  ['c', null, null, 0n, '', '"text"', null],
  ['d', '[]', 1e21, 7n, '=1+1', '12345678901234567890', null],
];

describe('NDJSON lines', () => {
  it('are byte for byte the whole-row toJson text: JSON columns, int64 at both ends, invalid JSON, blobs, odd strings', () => {
    for (const row of ROWS) expect(ndjsonLine(COLUMNS, row)).toBe(wholeRow(COLUMNS, row));
  });

  it('go to the sink in order, one per row', async () => {
    const chunks: Buffer[] = [];
    const sink: ByteSink = {
      write(chunk, written) {
        chunks.push(Buffer.from(chunk));
        written?.();
        return true;
      },
      drain: async () => {},
      end: async () => {},
    };
    expect(await writeNdjson(COLUMNS, ROWS, sink)).toBe(ROWS.length);
    expect(Buffer.concat(chunks).toString('utf8')).toBe(ROWS.map((r) => wholeRow(COLUMNS, r)).join(''));
  });
});

describe('BLOB cells in NDJSON', () => {
  it('are the base64 of their bytes: exact for any bytes, in any column, a JSON column included', () => {
    const cells = [Buffer.from([65, 66, 67, 0]), new Uint8Array([0xff, 0xfe, 0x00]), Buffer.alloc(0), Buffer.from('{"a":1}')];
    expect(ndjsonLine(['b1', 'b2', 'empty', 'raw'], cells)).toBe('{"b1":"QUJDAA==","b2":"//4A","empty":"","raw":"eyJhIjoxfQ=="}\n');
    // A view of a larger buffer: only its own bytes.
    const big = Buffer.from('xxABCyy');
    expect(ndjsonLine(['b'], [big.subarray(2, 5)])).toBe('{"b":"QUJD"}\n');
    for (const cell of cells) {
      const back = Buffer.from(JSON.parse(ndjsonLine(['b'], [cell])).b as string, 'base64');
      expect(back.equals(Buffer.from(cell))).toBe(true);
    }
  });
  // Through export, of an analyst's own column, on every kind: test/contract/export.test.ts.
});
