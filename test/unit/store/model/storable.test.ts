/**
 * store/model/storable.ts unstorable: the one rule of what every backend can store, each part
 * naming the field at fault. (Depth at 100,000 levels: test/unit/deep-values.test.ts; on every
 * backend for real: test/contract/unstorable.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { NumberText, parseJson } from '../../../../src/core/json.js';
import { MAX_INDEXED_BYTES, mayHoldUnstorable, unstorable } from '../../../../src/store/model/storable.js';

describe('unstorable', () => {
  it('a number past a double, wherever it is, by its text; a float where an integer is read, nested', () => {
    const record = parseJson('{"id":"r","score":1e400,"x":[1,{"y":-2E+999}]}') as Record<string, unknown>;
    expect(record.score).toBeInstanceOf(NumberText);
    expect(unstorable(record)).toBe(
      'score: 1e400 is a number out of the range of a double (about ±1.8e308), which every backend would store as something else (Infinity, null)',
    );
    expect(unstorable({ x: [1, { y: new NumberText('-2E+999') }] })).toMatch(/^x\[1\]\.y: -2E\+999 is a number out of the range/);
    expect(unstorable({ detail: { order_index: new NumberText('5.0') } })).toMatch(
      /^detail\.order_index: 5\.0 is a number written with a fraction/,
    );
    // The record's own order_index is the int64 rule's (sync/records.ts): not this one's.
    expect(unstorable({ order_index: new NumberText('5.0') })).toBeUndefined();
    // Integers of any size are kept exactly (bigints): storable.
    expect(unstorable({ n: 10n ** 40n })).toBeUndefined();
  });

  it('U+0000 or a lone surrogate in a string or a name, shown escaped; a pair and the text "\\u0000" are fine', () => {
    expect(unstorable({ a: { 'odd key': ['ok', 'x\u0000'] } })).toBe(
      'a["odd key"][1]: this string holds U+0000 or a lone surrogate, which PostgreSQL can store in neither text nor jsonb (and SQLite\'s UTF-8 cannot carry a lone surrogate)',
    );
    const named = unstorable({ f: { 'k\u0000': 1 } }) as string;
    expect(named).toMatch(/^f\["k\\u0000"\]: the name of this member holds U\+0000/);
    expect(named.includes('\u0000')).toBe(false);
    expect(unstorable({ a: 'x\udc00' })).toMatch(/^a: this string holds/);
    expect(unstorable({ a: '\ud83d\ude00', b: 'C:\\u0000dir' })).toBeUndefined();
    // A name megabytes long is cut in the reason.
    expect(unstorable({ [`${'n'.repeat(100_000)}\u0000`]: 1 })?.length).toBeLessThan(300);
    // Told that no string can hold one (the page's body had no such escape), strings are not tested.
    expect(unstorable({ a: 'x\u0000' }, false)).toBeUndefined();
  });

  it(`a value of an indexed column past ${MAX_INDEXED_BYTES} bytes of UTF-8: e-mails and ids, nested or flat, detail ids, skill keys`, () => {
    const long = 'é'.repeat(MAX_INDEXED_BYTES / 2 + 1);
    const short = 'é'.repeat(MAX_INDEXED_BYTES / 2);
    expect(unstorable({ user: { email: short } })).toBeUndefined();
    expect(unstorable({ user: { email: long } })).toBe(
      `user.email: ${MAX_INDEXED_BYTES + 2} bytes, longer than the ${MAX_INDEXED_BYTES} an indexed column takes (PostgreSQL refuses an index entry past 2,704)`,
    );
    expect(unstorable({ user: { id: long } })).toMatch(/^user\.id: /);
    expect(unstorable({ user_id: long })).toMatch(/^user_id: /);
    expect(unstorable({ email: long })).toMatch(/^email: /);
    expect(unstorable({ eval_results: [{ skill: { key: 'K' } }, { skill: { key: long } }] })).toMatch(/^eval_results\[1\]\.skill\.key: /);
    expect(unstorable({ score_details: [{ id: 'd1' }, { id: long }] })).toMatch(/^score_details\[1\]\.id: /);
    expect(unstorable({ score_details: [{ id: 'd1', eval_results: [{ skill: { key: long } }] }] })).toMatch(
      /^score_details\[0\]\.eval_results\[0\]\.skill\.key: /,
    );
    // A column fills with an object's JSON text: its length counts.
    expect(unstorable({ user: { email: { a: 'x'.repeat(MAX_INDEXED_BYTES) } } })).toMatch(/^user\.email: /);
    // Not indexed: as long as it likes.
    expect(unstorable({ feedback: { text: long.repeat(100) } })).toBeUndefined();
  });
});

describe('mayHoldUnstorable', () => {
  it('is true for a body with a \\u0000 or surrogate escape, false for other escapes and plain text', () => {
    const yes = ['"a\\u0000b"', '"\\ud800"', '"\\uDC00"', '"\\ud83d\\ude00"', '"\\\\u0000"'];
    const no = ['"plain"', '"\\u00e9"', '"\\n"', '"u0000"'];
    for (const t of yes) expect(mayHoldUnstorable(Buffer.from(t)), t).toBe(true);
    for (const t of no) expect(mayHoldUnstorable(Buffer.from(t)), t).toBe(false);
  });
});
