/**
 * NDJSON export builds each line cell by cell (export/writers.ts): the text must be what
 * `toJson` of the whole row object gave before, JSON columns embedded, int64 exact.
 */
import { describe, expect, it } from 'vitest';
import { parseJson, toJson } from '../src/core/json.js';
import type { Sink } from '../src/export/sink.js';
import { ndjsonLine, writeNdjson } from '../src/export/writers.js';

/** The line as it was made before: the row as an object, JSON columns parsed, then toJson. */
function wholeRow(columns: string[], row: unknown[]): string {
  const out: Record<string, unknown> = {};
  columns.forEach((key, i) => {
    const v = row[i];
    let value = v;
    if (['raw', 'feedback', 'additional_scores'].includes(key) && typeof v === 'string') {
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
    const sink: Sink = {
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
