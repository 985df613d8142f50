/**
 * core/json-bytes.ts: a large body parsed record by record gives what parsing it whole gives, the
 * same error when it is not JSON, and is really cut at its records (else it would only be slower).
 * Hand-picked hostile bodies, then 3,000 random ones (strings full of the scan's own bytes, escapes,
 * nesting, whitespace, invalid UTF-8, `data` keys in odd places) and their one-byte mutations.
 */
import { describe, expect, it } from 'vitest';
import { NumberText, parseJson } from '../../../src/core/json.js';
import { findRecordCuts, largeText, parseCut, parseJsonBytes } from '../../../src/core/json-bytes.js';

/** The reference way: decode the whole body, then parse it. */
function whole(body: Buffer): { value: unknown } | { error: string } {
  try {
    return { value: parseJson(body.toString('utf8')) };
  } catch (err) {
    return { error: String(err) };
  }
}

function viaBytes(body: Buffer): { value: unknown } | { error: string } {
  try {
    return { value: parseJsonBytes(body) };
  } catch (err) {
    return { error: String(err) };
  }
}

/** A session-like record with accented names (two-byte text) and the scan's own bytes in its strings. */
function record(i: number): Record<string, unknown> {
  return {
    id: `rec-${i}`,
    order_index: 1000 + i,
    campaign: { id: 'camp' },
    user: { id: `u${i}`, email: `zoë.${i}@example.com` },
    feedback: { text: `says "],\\"data\\":[{" and \\ and } ] , [ { é ${'x'.repeat(i % 7)}` },
    eval_results: [{ skill: { key: 'k', label: 'Ålesund' }, score: '4.5', rationale: 'a\\"b\\\\' }],
    nested: [[1, [2, { data: [3] }]], {}],
  };
}

function page(n: number, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(
    JSON.stringify({ data: Array.from({ length: n }, (_, i) => record(i)), has_more: true, last_record_index: 1000 + n - 1, ...extra }),
  );
}

describe('a large page parsed from its bytes', () => {
  it('is cut at each of its records, and gives the value parsing it whole gives', () => {
    const body = page(500);
    expect(body.length).toBeGreaterThan(131_000);
    const cuts = findRecordCuts(body);
    expect(cuts?.cuts.length).toBe(2 * 500);
    // A limit on the records: the scan gives up past it.
    expect(findRecordCuts(body, 500)?.cuts.length).toBe(2 * 500);
    expect(findRecordCuts(body, 499)).toBeUndefined();
    // Each cut is one record, as it was written.
    const first = body.toString('utf8', cuts?.cuts[0], cuts?.cuts[1]);
    expect(JSON.parse(first)).toEqual(record(0));
    expect(parseCut(body)).toEqual(parseJson(body.toString('utf8')));
    expect(parseJsonBytes(body)).toEqual(parseJson(body.toString('utf8')));
  });

  it('cuts a bare array, keeps the envelope’s other keys (before and after data) and whitespace anywhere', () => {
    const records = Array.from({ length: 300 }, (_, i) => record(i));
    const bare = Buffer.from(` \n[ ${records.map((r) => JSON.stringify(r, null, 1)).join(' ,\r\n')} ]\t`);
    expect(findRecordCuts(bare)?.cuts.length).toBe(600);
    expect(parseJsonBytes(bare)).toEqual(records);
    const around = Buffer.from(
      `{"object":"list", "meta": {"data": [1,2], "x": {}} ,"data" :\n[${records.map((r) => JSON.stringify(r)).join(',')}], "has_more": false}`,
    );
    expect(findRecordCuts(around)?.cuts.length).toBe(600);
    expect(parseJsonBytes(around)).toEqual({ object: 'list', meta: { data: [1, 2], x: {} }, data: records, has_more: false });
  });

  it('an empty data array, and an array of scalars', () => {
    const pad = 'é'.repeat(70_000);
    const empty = Buffer.from(`{"pad":"${pad}","data":[ \n ],"has_more":false}`);
    expect(parseCut(empty)).toEqual({ pad, data: [], has_more: false });
    const scalars = Buffer.from(`{"data":["${pad}",1,null,true,-0,1.5e3,{},[]]}`);
    expect(parseCut(scalars)).toEqual(parseJson(scalars.toString('utf8')));
    expect(parseCut(Buffer.from(`["${pad}",1,2]`))).toEqual([pad, 1, 2]);
  });

  it('is parsed whole where the cut cannot be sure: a second data key, an escaped key, data that is not an array', () => {
    const records = JSON.stringify(Array.from({ length: 300 }, (_, i) => record(i)));
    for (const text of [
      `{"data":${records},"data":[1]}`,
      `{"data":[1],"data":${records}}`,
      `{"d\\u0061ta":${records},"data":[]}`,
      `{"data":{"rows":${records}}}`,
      `{"rows":${records}}`,
      `"${'x'.repeat(140_000)}"`,
      `\ufeff{"data":${records}}`,
    ]) {
      const body = Buffer.from(text);
      expect(findRecordCuts(body), text.slice(0, 40)).toBeUndefined();
      expect(viaBytes(body)).toEqual(whole(body));
    }
  });

  it('a body that is not JSON gets the error parsing it whole gives', () => {
    const records = Array.from({ length: 300 }, (_, i) => JSON.stringify(record(i)));
    const ok = `{"data":[${records.join(',')}],"has_more":false}`;
    const bad = [
      ok.replace('],"has_more"', ',],"has_more"'), // a trailing comma
      ok.replace('[{', '[,{'),
      ok.replace('"has_more":false}', '"has_more":false'), // cut short
      `${ok} x`, // trailing garbage
      ok.replace('"rec-5"', '"rec\u0001-5"'), // a control character in a string
      ok.replace('"rec-7"', '"rec-7'), // an unterminated string
      ok.replace('}],"has', ']],"has'), // brackets that do not match
      ok.replace('{"id":"rec-9"', '{"id""rec-9"'),
      ok.replace('"order_index":1010', '"order_index":01010'),
      `[${records.join(',')}]]`,
    ];
    for (const text of bad) {
      const body = Buffer.from(text);
      const expected = whole(body);
      expect(expected).toHaveProperty('error');
      expect(parseCut(body)).toBeUndefined();
      expect(viaBytes(body)).toEqual(expected);
    }
  });

  it('numbers JSON.parse would round, and cursors written as floats, come out as the lossless parser reads the whole page', () => {
    const records = Array.from({ length: 300 }, (_, i) => JSON.stringify(record(i)));
    const big = Buffer.from(`{"data":[${records.join(',').replace('"order_index":1042', '"order_index":9007199254740993')}]}`);
    const parsed = parseJsonBytes(big) as { data: Array<{ order_index: unknown }> };
    expect(parsed.data[42]?.order_index).toBe(9007199254740993n);
    expect(parsed).toEqual(parseJson(big.toString('utf8')));
    const float = Buffer.from(`{"data":[${records.join(',')}],"last_record_index":1299.0}`);
    const read = parseJsonBytes(float) as { last_record_index: unknown };
    expect(read.last_record_index).toBeInstanceOf(NumberText);
    expect(read).toEqual(parseJson(float.toString('utf8')));
  });

  it('a cursor written as a float inside a record is found by the scan itself: the body is read whole, losslessly, as parseJson reads it', () => {
    const records = Array.from({ length: 300 }, (_, i) => JSON.stringify(record(i)));
    for (const written of ['"order_index":1042.0', '"order_index" :\t 1042e0', '"order_index":-1.5E3', '"last_record_id": 7.25']) {
      const body = Buffer.from(`{"data":[${records.join(',').replace('"order_index":1042', written)}]}`);
      expect(body.toString()).toContain(written);
      expect(findRecordCuts(body)?.floatCursor, written).toBe(true);
      expect(parseCut(body), written).toBeUndefined();
      const read = parseJsonBytes(body) as { data: Array<Record<string, unknown>> };
      expect(read, written).toEqual(parseJson(body.toString('utf8')));
      expect(
        Object.values(read.data[42] as object).some((v) => v instanceof NumberText),
        written,
      ).toBe(true);
    }
    // Not a cursor key: longer or shorter names, the name as a value, a plain integer, a key with a
    // name's length. The body is cut, and reads as the whole parse reads it.
    for (const written of [
      '"order_index":1042,"xorder_index":1.5',
      '"order_index":1042,"order_inde":1.5',
      '"order_index":1042,"note":"order_index","y":2.5',
      '"order_index":1042,"order_indey":2.5',
    ]) {
      const body = Buffer.from(`{"data":[${records.join(',').replace('"order_index":1042', written)}]}`);
      expect(findRecordCuts(body)?.floatCursor, written).toBe(false);
      expect(parseCut(body), written).toEqual(parseJson(body.toString('utf8')));
    }
  });

  it('a quote after a run of backslashes ends its string only when the run is even', () => {
    const records = Array.from({ length: 300 }, (_, i) => {
      const r = record(i) as Record<string, unknown>;
      // Runs of 1 to 6 backslashes, before a quote and elsewhere; a string that is only backslashes.
      r.note = `${'\\'.repeat(i % 7)}"${'\\'.repeat(i % 3)}x,]}${'\\'.repeat((i + 1) % 5)}`;
      r.slashes = '\\'.repeat(i % 4);
      return JSON.stringify(r);
    });
    const body = Buffer.from(`{"data":[${records.join(',')}],"has_more":false}`);
    expect(findRecordCuts(body)?.cuts.length).toBe(600);
    expect(parseCut(body)).toEqual(JSON.parse(body.toString('utf8')));
  });

  it('invalid UTF-8 inside strings decodes to the same characters as the whole body', () => {
    const records = Array.from({ length: 300 }, (_, i) => JSON.stringify(record(i)));
    const parts = records.map((r, i) => {
      const b = Buffer.from(r);
      const at = b.indexOf('zo') + 2;
      // A lone continuation byte, a cut sequence, an overlong one, right at a string's end or inside it.
      const junk = [Buffer.from([0x80]), Buffer.from([0xe2, 0x82]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xf0, 0x9f, 0x98])][
        i % 4
      ] as Buffer;
      return Buffer.concat([b.subarray(0, at), junk, b.subarray(at)]);
    });
    const body = Buffer.concat([
      Buffer.from('{"data":['),
      ...parts.flatMap((p, i) => (i === 0 ? [p] : [Buffer.from(','), p])),
      Buffer.from(']}'),
    ]);
    expect(findRecordCuts(body)?.cuts.length).toBe(600);
    expect(parseJsonBytes(body)).toEqual(parseJson(body.toString('utf8')));
  });
});

describe('which bodies are cut', () => {
  it('only those whose text decoded whole would be a large object: past 131 kB, or 65 kB with a character past U+00FF', () => {
    const body = (n: number, c: string) => Buffer.from(`["${c}${'a'.repeat(n - 5 - Buffer.byteLength(c))}"]`);
    expect(largeText(body(64_000, 'ő'))).toBe(false);
    expect(largeText(body(100_000, 'ő'))).toBe(true);
    // Latin-1 accents keep the text one-byte: one string is faster there.
    expect(largeText(body(100_000, 'é'))).toBe(false);
    expect(largeText(body(100_000, 'a'))).toBe(false);
    // Invalid UTF-8 decodes to U+FFFD, a two-byte character.
    expect(largeText(Buffer.concat([body(100_000, 'a'), Buffer.from([0xff])]))).toBe(true);
    expect(largeText(body(132_000, 'a'))).toBe(true);
    expect(largeText(body(132_000, 'é'))).toBe(true);
  });

  it('a page of tiny records is parsed whole: a part each would cost more than it saves', () => {
    const tiny = Buffer.from(`{"data":[${Array.from({ length: 40_000 }, (_, i) => `"${i % 10}"`).join(',')}]}`);
    expect(largeText(tiny)).toBe(true);
    expect(findRecordCuts(tiny)?.cuts.length).toBe(80_000);
    expect(parseCut(tiny)).toBeUndefined();
    expect(parseCut(tiny, 0)).toEqual(JSON.parse(tiny.toString('utf8')));
    expect(parseJsonBytes(tiny)).toEqual(JSON.parse(tiny.toString('utf8')));
  });
});

describe('random bodies and their mutations', () => {
  // A small seeded generator: the same 3,000 bodies on every run.
  let seed = 0x2545f491;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const pieces = ['"', '\\', '\\"', '\\\\', ',', '[', ']', '{', '}', ':', 'data', 'é', '😀', ' ', '\n', 'a', '\\u0022', '\\n'];
  const str = () => Array.from({ length: rand(6) }, () => pieces[rand(pieces.length)]).join('');
  const ws = () => [' ', '', '\n', '\t', '\r\n', ''][rand(6)] as string;
  function value(depth: number): string {
    const k = rand(depth > 3 ? 4 : 7);
    if (k === 0) return String(rand(1000) - 500);
    if (k === 1) return JSON.stringify(str());
    if (k === 2) return ['true', 'false', 'null', '1.5', '-0', '1e2'][rand(6)] as string;
    if (k === 3) return `"${str()}"`; // raw, maybe invalid JSON
    if (k === 4 || k === 5) {
      const n = rand(4);
      const keys = ['data', 'id', str(), 'x'];
      return `{${Array.from({ length: n }, () => `${ws()}${JSON.stringify(keys[rand(4)])}${ws()}:${ws()}${value(depth + 1)}`).join(',')}${ws()}}`;
    }
    return `[${Array.from({ length: rand(4) }, () => ws() + value(depth + 1) + ws()).join(',')}]`;
  }
  function body(): string {
    const records = Array.from({ length: 1 + rand(5) }, () => ws() + value(1) + ws()).join(',');
    const shape = rand(4);
    if (shape === 0) return `${ws()}[${records}]${ws()}`;
    const before = rand(2) ? `"has_more":${ws()}true,${ws()}` : '';
    const after = rand(2) ? `,"meta":${value(1)}` : '';
    const dup = shape === 3 ? `,"data":[${value(1)}]` : '';
    return `${ws()}{${before}"data"${ws()}:${ws()}[${records}]${after}${dup}}${ws()}`;
  }

  it('never give a value parsing them whole would not, nor hide an error', () => {
    let cut = 0;
    for (let n = 0; n < 3_000; n++) {
      let text = body();
      if (n % 2 === 1) {
        // One byte inserted or removed: mostly bodies that are not JSON.
        const at = rand(text.length);
        text = rand(2) ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + pieces[rand(pieces.length)] + text.slice(at);
      }
      const b = Buffer.from(text);
      const expected = whole(b);
      const got = parseCut(b, 0);
      if (got === undefined) continue;
      cut++;
      expect(expected, text).toHaveProperty('value');
      expect(got, text).toEqual((expected as { value: unknown }).value);
    }
    // Most well-formed bodies are cut: the scan is not just giving up.
    expect(cut).toBeGreaterThan(1_000);
  });
});
