/**
 * core/json.ts's scan for cursor fields written as floats or with exponents: the same answer as the
 * one regex it replaced, on hand-picked texts and on 200,000 random texts built from the tokens
 * that matter (quotes, the three keys and their parts, colons, spaces, digits, signs, `.`, `e`).
 */
import { describe, expect, it } from 'vitest';
import { cursorNotPlain, parseJson } from '../../../src/core/json.js';

const REFERENCE = /"(?:order_index|last_record_index|last_record_id)"\s*:\s*-?\d*[.eE]/;

const TOKENS = [
  '"order_index"',
  '"last_record_index"',
  '"last_record_id"',
  ': ',
  ':',
  '"',
  '"',
  'order_index',
  'last_record_index',
  'last_record_id',
  'order',
  '_index',
  'last_record',
  '_id',
  'x',
  ':',
  ' ',
  '\n',
  '\t',
  '-',
  '1',
  '07',
  '.',
  'e',
  'E',
  ',',
  '{',
  '}',
  'é',
];

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('cursor fields not written as plain integers', () => {
  it('are found where the reference regex finds them, and only there', () => {
    const cases = [
      '{"order_index": 5.0}',
      '{"order_index":1e3}',
      '{"order_index" :\n -2E1}',
      '{"order_index": 5}',
      '{"last_record_index":12.5,"data":[]}',
      '{"last_record_id": 7e0}',
      '{"xorder_index": 5.0}',
      '{"order_index_x": 5.0}',
      '{"name":"order_index\\": 1.5"}',
      '{"xorder_index": 1.0, "order_index": 2.5}',
      '{"a":"b"}order_index": 1.5',
      'order_index": 1.5',
      '{"order_index": "1.5"}',
      '{"order_index": .5}',
      '{"order_index": -.5}',
      '"order_index"."',
    ];
    for (const text of cases) expect(cursorNotPlain(text), text).toBe(REFERENCE.test(text));
    expect(cursorNotPlain('{"order_index": 5.0}')).toBe(true);
    expect(cursorNotPlain('{"xorder_index": 5.0}')).toBe(false);
  });

  it('agree with the reference regex on 200,000 random texts', () => {
    const next = random(15);
    let found = 0;
    for (let n = 0; n < 200_000; n++) {
      let text = '';
      const length = 1 + Math.floor(next() * 10);
      for (let i = 0; i < length; i++) text += TOKENS[Math.floor(next() * TOKENS.length)];
      const expected = REFERENCE.test(text);
      if (expected) found++;
      if (cursorNotPlain(text) !== expected) expect.fail(`disagree on ${JSON.stringify(text)}`);
    }
    // The texts do reach both answers.
    expect(found).toBeGreaterThan(100);
  });

  it('a page with such a cursor is parsed losslessly, so the check can name it', () => {
    const page = parseJson('{"data":[{"id":"a","order_index": 1.0}],"has_more":false}') as { data: Array<{ order_index: unknown }> };
    expect(typeof page.data[0]?.order_index).toBe('object');
    const plain = parseJson('{"data":[{"id":"a","order_index": 1}],"has_more":false}') as { data: Array<{ order_index: unknown }> };
    expect(plain.data[0]?.order_index).toBe(1);
  });
});
