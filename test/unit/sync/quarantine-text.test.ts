/** A quarantined record's text: cut from the body's bytes as received, the API key never in it. */
import { describe, expect, it } from 'vitest';
import { redactor } from '../../../src/core/redact.js';
import { quarantined, recordTexts } from '../../../src/sync/quarantine.js';

const KEY = 'sk_live_abcdefgh12345678';
const origin = { after: 7n, since: undefined, until: undefined, requestId: 'req-1', redact: redactor(KEY) };
const fault = (index: number) => ({ index, reason: 'bad', id: undefined, orderIndex: undefined });

describe('quarantined record text', () => {
  it('is each record as the body holds it, spacing, escapes and number spelling kept', () => {
    const records = ['{ "id" : "a", "n": 1.50 }', '{"id":"b","s":"caf\\u00e9 \\"x\\""}', '[1,2]'];
    const body = Buffer.from(`{"data": [\n  ${records.join(' ,\n  ')}\n], "has_more": false}`);
    expect(recordTexts(body, 3)).toEqual(records);
    const data = JSON.parse(body.toString()).data as unknown[];
    expect(quarantined([fault(0), fault(2)], data, body, origin).map((q) => [q.raw, q.position, q.after])).toEqual([
      [records[0], 1, 7n],
      [records[2], 3, 7n],
    ]);
  });

  it('a bare array page, and an empty one', () => {
    expect(recordTexts(Buffer.from('[{"id":"a"} ,{"id":"b"}]'), 2)).toEqual(['{"id":"a"}', '{"id":"b"}']);
    expect(recordTexts(Buffer.from('{"data":[ ],"has_more":false}'), 0)).toEqual([]);
  });

  it('a record holding the key, plainly or JSON-escaped, is kept without it', () => {
    const escaped = [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    for (const text of [`{"token":"${KEY}"}`, `{"token":"${escaped}"}`]) {
      const body = Buffer.from(`{"data":[${text}],"has_more":false}`);
      const data = JSON.parse(body.toString()).data as unknown[];
      const [q] = quarantined([fault(0)], data, body, origin);
      expect(q?.raw).not.toContain(KEY);
      expect(q?.raw).not.toContain(escaped);
      expect(q?.raw).toContain('[the API key]');
    }
  });
});

describe('simulate --malformed', () => {
  it('takes N or N:kinds, and names what is wrong', async () => {
    const { malformedKind, parseMalformed } = await import('../../../src/simulator/malformed.js');
    const plan = parseMalformed('50:id,score');
    expect([49, 99, 149, 0, 50].map((i) => malformedKind(plan, i))).toEqual(['id', 'score', 'id', undefined, undefined]);
    expect(parseMalformed('3').kinds).toEqual(['id', 'score', 'campaign', 'order-index', 'deep', 'nul', 'huge-number', 'int64']);
    expect(() => parseMalformed('0')).toThrow(/--malformed: "0"/);
    expect(() => parseMalformed('5:nope')).toThrow(/unknown kind "nope"/);
  });
});
