/**
 * No recursion of our own that a hostile depth can overflow: JSON.parse reads a value nested 100,000
 * levels deep, and every walk of a record (parsing losslessly, writing JSON text, hashing it, the
 * record rule, drift, finding a person, redacting, exporting) must take it without a stack overflow.
 * Such a record is quarantined by the rule (store/model/storable.ts MAX_DEPTH) before any backend
 * sees it; these are the steps it passes through on the way, and what an old mirror may hold.
 */
import { describe, expect, it } from 'vitest';
import { NumberText, parseJson, toJson } from '../../src/core/json.js';
import { parseJsonBytes } from '../../src/core/json-bytes.js';
import { redactJson, redactor } from '../../src/core/redact.js';
import { type CheckedRecord, streamId } from '../../src/core/types.js';
import { ndjsonLine } from '../../src/export/writers.js';
import { knownPerson, PersonGraph, quarantinedNames, scrubPerson } from '../../src/store/model/person.js';
import { quarantineValues } from '../../src/store/model/quarantine.js';
import { MAX_DEPTH, unstorable } from '../../src/store/model/storable.js';
import { StreamDrift } from '../../src/sync/drift.js';
import { sortPage } from '../../src/sync/records.js';

const LEVELS = 100_000;

/** `{"a":{"a":…LEAF…}}`, `levels` objects deep, as text and as the value JSON.parse gives. */
function deepText(levels: number, leaf: string): string {
  return `${'{"a":'.repeat(levels)}${leaf}${'}'.repeat(levels)}`;
}
function deepValue(levels: number, leaf: unknown): Record<string, unknown> {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v as Record<string, unknown>;
}
/** The value `levels` steps down the `a` chain. */
function down(v: unknown, levels: number): unknown {
  for (let i = 0; i < levels; i++) v = (v as { a: unknown }).a;
  return v;
}

describe(`a value ${LEVELS.toLocaleString('en')} levels deep`, () => {
  it('is parsed from a page that needs the lossless parser: the deep record apart, the others exact (int64 past 2^53)', () => {
    const big = 2n ** 53n + 1n;
    const body = Buffer.from(
      `{"data":[{"id":"r1","campaign":{"id":"c"},"order_index":${big}},{"id":"r2","campaign":{"id":"c"},"trace":${deepText(LEVELS, '1')},"order_index":${big + 1n}},{"id":"r3","campaign":{"id":"c"},"order_index":${big + 2n}}],"has_more":false,"last_record_index":${big + 2n}}`,
    );
    // The lossless parser alone recurses past the stack on it.
    expect(() => parseJson(body.toString('utf8'))).toThrow(RangeError);
    const page = parseJsonBytes(body) as { data: Array<Record<string, unknown>>; last_record_index: unknown };
    expect(page.last_record_index).toBe(big + 2n);
    expect(page.data.map((r) => r.order_index)).toEqual([big, Number(big + 1n), big + 2n]);
    expect(down(page.data[1]?.trace, LEVELS - 1)).toEqual({ a: 1 });
    // The record rules quarantine it for its depth (not for the order_index JSON.parse rounded), the others pass.
    const sorted = sortPage(page.data, { where: 'GET page', campaignId: 'c', after: undefined, redact: redactor('secret-key') });
    expect(sorted.records.map((r) => r.id)).toEqual(['r1', 'r3']);
    expect(sorted.faults).toHaveLength(1);
    expect(sorted.faults[0]?.reason).toMatch(
      /^trace(\.a)+… \(500 levels down\): nested deeper than 500 levels.* — record 2 of 3 \(id r2\)/,
    );
  });

  it('is written as JSON text, bigints exact, as JSON.stringify writes each part (no recursion)', () => {
    const leaf = {
      n: 2n ** 70n,
      t: new NumberText('1e400'),
      u: undefined,
      f: () => 1,
      d: new Date(0),
      list: [undefined, 'é"\n\u0000', -0, Number.NaN, true, null, {}],
    };
    const text = toJson(deepValue(LEVELS, leaf));
    expect(text).toBe(deepText(LEVELS, toJson(leaf)));
    expect(toJson(leaf)).toBe(
      `{"n":${2n ** 70n},"t":"1e400","d":"1970-01-01T00:00:00.000Z","list":[null,"é\\"\\n\\u0000",0,null,true,null,{}]}`,
    );
    // Arrays too, and the top level.
    expect(toJson(deepValue(LEVELS, [1, [2n]]))).toBe(deepText(LEVELS, '[1,[2]]'));
    let arrays: unknown = 'x';
    for (let i = 0; i < LEVELS; i++) arrays = [arrays, i === 0 ? undefined : 1];
    expect(toJson(arrays)).toBe(`${'['.repeat(LEVELS)}"x",null]${',1]'.repeat(LEVELS - 1)}`);
  });

  it('fails the record rule for its depth at once, the path cut; one MAX_DEPTH deep passes', () => {
    expect(unstorable(deepValue(LEVELS, 1))).toBe(
      `a.a.a.a.a.a.a.a… (${MAX_DEPTH} levels down): nested deeper than ${MAX_DEPTH} levels of arrays and objects`,
    );
    expect(unstorable(deepValue(MAX_DEPTH, 1))).toBeUndefined();
    expect(unstorable(deepValue(MAX_DEPTH + 1, 1))).toMatch(/nested deeper than/);
    // Arrays count as levels too.
    expect(unstorable({ list: JSON.parse(`${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}`) })).toMatch(
      /^list(\[0\])+… \(500 levels down\)/,
    );
  });

  it('is hashed and kept in the quarantine by its text', () => {
    const raw = deepText(LEVELS, '1');
    const id = streamId('c', 'session', null);
    const values = quarantineValues(id, {
      raw,
      reason: 'deep',
      recordId: undefined,
      orderIndex: undefined,
      after: undefined,
      since: undefined,
      until: undefined,
      position: 1,
      requestId: undefined,
      at: '2026-01-01T00:00:00Z',
    });
    expect(values[6]).toBe(raw);
    expect(values[7]).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is walked by drift without recursing into it', () => {
    const drift = new StreamDrift(streamId('c', 'session', null), [], 'warn');
    const record = { id: 'r', order_index: 1, trace: deepValue(LEVELS, 1) };
    const checked: CheckedRecord = { record, id: 'r', orderIndex: 1n, raw: '' };
    expect(drift.page([checked])?.items.map((i) => i.value)).toContain('trace.a.a');
  });

  it('is searched for a person: found deep inside, scrubbed, and in a quarantined text', () => {
    const bob = { id: 'b-2', email: 'bob@example.com' };
    const g = new PersonGraph();
    g.add({ id: 'r', user: { id: 'a-1', email: 'ann@example.com' }, trace: deepValue(LEVELS, { user: bob }) });
    expect(g.find('bob@example.com').hasId('b-2')).toBe(true);
    const record = { id: 'r', user: { id: 'a-1' }, trace: deepValue(LEVELS, { user: bob }) };
    expect(scrubPerson(record, knownPerson(['b-2'], [])).kind).toBe('part');
    const raw = `{"id":"q","trace":${deepText(LEVELS, JSON.stringify({ user: bob }))}}`;
    // Found by parsing the text (no term is given to find it as text).
    expect(quarantinedNames(raw, knownPerson(['b-2'], []), [])).toBe(true);
  });

  it('is redacted, names of members included', () => {
    const key = 'sk_live_0123456789abcdef';
    const redact = redactor(key);
    const out = redactJson(deepValue(LEVELS, { [key]: `says ${key}` }), redact);
    expect(down(out, LEVELS)).toEqual({ '[the API key]': 'says [the API key]' });
    expect(toJson(out).includes(key)).toBe(false);
  });

  it('is exported as an NDJSON cell, whole', () => {
    const raw = deepText(LEVELS, '[1,2]');
    const line = ndjsonLine(['id', 'raw'], ['r', raw]);
    expect(line).toBe(`{"id":"r","raw":${raw}}\n`);
  });
});
