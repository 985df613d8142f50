/**
 * store/model/person.ts: the one rule by which every store finds a candidate in a record and takes them
 * out of it (forget --user).
 */
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../../../src/core/json.js';
import {
  knownPerson,
  PersonGraph,
  personDigests,
  personOfDigests,
  quarantinedNames,
  scrubPerson,
} from '../../../../src/store/model/person.js';

const A = { id: 'a-1', email: 'ann@example.com' };
const B = { id: 'b-2', email: 'Bob@Example.com' };

function detailed(owner: { id: unknown; email: string }, details: Array<{ id: unknown; email: string }>) {
  return {
    id: 'r-1',
    user: owner,
    overall_score: 3,
    score_details: details.map((u, i) => ({ id: `d-${i}`, user: u, score: i, feedback: { text: 'ok' } })),
  };
}

describe('scrubPerson', () => {
  it('a record naming them at its top goes whole, by id or by e-mail in any case, nested or flat', () => {
    const bob = knownPerson([B.id], []);
    expect(scrubPerson(detailed(B, [B]), bob).kind).toBe('whole');
    expect(scrubPerson({ id: 's', user_id: B.id, email: 'x@y.z' }, bob).kind).toBe('whole');
    expect(scrubPerson({ id: 's', user_email: 'BOB@example.COM' }, knownPerson([], [B.email])).kind).toBe('whole');
    expect(scrubPerson(detailed(A, [A]), bob).kind).toBe('none');
  });

  it("another's record keeps everything but their score detail", () => {
    const record = detailed(A, [A, B, A]);
    const before = structuredClone(record);
    const s = scrubPerson(record, knownPerson([], ['bob@example.com']));
    expect(s).toMatchObject({ kind: 'part', parts: 1 });
    expect(record).toEqual({ ...before, score_details: [before.score_details[0], before.score_details[2]] });
  });

  it('any nested object naming them goes, and their e-mail as a bare value becomes [erased]', () => {
    const record = {
      id: 'r',
      user: A,
      reviews: { first: { user: { id: B.id }, note: 'x' }, second: { user: A, note: 'y' } },
      cc: ['BOB@EXAMPLE.COM', 'carl@example.com'],
      contact: 'bob@example.com',
    };
    const s = scrubPerson(record, knownPerson([B.id], [B.email]));
    expect(s).toMatchObject({ kind: 'part', parts: 3 });
    expect(record).toEqual({
      id: 'r',
      user: A,
      reviews: { second: { user: A, note: 'y' } },
      cc: ['[erased]', 'carl@example.com'],
      contact: '[erased]',
    });
  });

  it('a numeric id matches its text, a bigint too; a score that equals it is not an id', () => {
    const record = parseJson('{"id":"r","user":{"id":1},"n":42,"score_details":[{"user":{"id":42}},{"user":{"id":12345678901234567890}}]}');
    const s = scrubPerson(record, knownPerson(['42', '12345678901234567890'], []));
    expect(s.kind).toBe('part');
    expect(record).toEqual({ id: 'r', user: { id: 1 }, n: 42, score_details: [] });
  });

  it('nothing of theirs: the record is left as it was', () => {
    const record = detailed(A, [A]);
    const before = structuredClone(record);
    expect(scrubPerson(record, knownPerson([B.id], [B.email]))).toEqual({ kind: 'none' });
    expect(record).toEqual(before);
  });

  it('a record nested deeper than the stack could recurse', () => {
    let deep: unknown = { user: B };
    for (let i = 0; i < 100_000; i++) deep = { x: deep };
    const record = { id: 'r', user: A, deep };
    expect(scrubPerson(record, knownPerson([B.id], [])).kind).toBe('part');
  });
});

describe('PersonGraph', () => {
  it('given an e-mail, finds their ids and the e-mails those ids were served with (older versions); others stay apart', () => {
    const g = new PersonGraph();
    g.add(detailed(B, [B]));
    g.add({ id: 'r-old', user: { id: B.id, email: 'bob.old@example.com' } });
    g.add(detailed(A, [A, { id: 'b-3', email: 'bob.old@EXAMPLE.com' }]));
    g.add({ id: 's', user_id: 'c-9', email: 'carl@example.com' });
    const p = g.find('BOB@example.com');
    expect([...p.ids].sort()).toEqual(['BOB@example.com', 'b-2', 'b-3']);
    expect([...p.emails].sort()).toEqual(['bob.old@example.com', 'bob@example.com']);
    expect(p.hasId('a-1') || p.hasEmail('ann@example.com') || p.hasId('c-9')).toBe(false);
    // Given an id, the same person (what was asked is matched as either).
    expect([...g.find('b-3').emails].sort()).toEqual(['b-3', 'bob.old@example.com', 'bob@example.com']);
  });

  it('found nowhere: the asked term alone', () => {
    const p = new PersonGraph().find('ghost@example.com');
    expect(p.hasEmail('GHOST@example.com')).toBe(true);
    expect(p.hasId('ghost@example.com')).toBe(true);
  });
});

describe('personDigests', () => {
  it('the mark holds no id or e-mail in clear, and still recognises them', () => {
    const key = Buffer.alloc(32, 7);
    const p = knownPerson(['b-2'], ['Bob@Example.com']);
    const digests = personDigests(p, key);
    expect(JSON.stringify(digests).toLowerCase()).not.toMatch(/b-2|bob/);
    const back = personOfDigests(digests, key);
    expect(back.hasId('b-2') && back.hasEmail('BOB@example.COM')).toBe(true);
    expect(back.hasId('a-1') || back.hasEmail('ann@example.com')).toBe(false);
    expect(personOfDigests(digests, Buffer.alloc(32, 8)).hasId('b-2')).toBe(false);
  });
});

describe('quarantinedNames: a quarantined record is theirs by the identity rule, never by a substring', () => {
  const ann = knownPerson(['7'], ['ann@example.com']);
  const terms = ['ann@example.com', '7'];
  const names = (raw: string) => quarantinedNames(raw, ann, terms);

  it('parsed: theirs at the top or inside; another e-mail that ends with theirs, or a 7 that is not an id, is not', () => {
    expect(names(JSON.stringify({ order_index: 3, user: { id: 7, email: 'x@y.z' } }))).toBe(true);
    expect(names(JSON.stringify({ user_email: 'ANN@example.com' }))).toBe(true);
    expect(names(JSON.stringify({ user: { id: 'j-1', email: 'joann@example.com' }, score: 7 }))).toBe(false);
    expect(names(JSON.stringify({ user_id: '77', order_index: 17, score: 7, id: '7e0c-47' }))).toBe(false);
    expect(names(JSON.stringify({ id: 'r', score_details: [{ user: { id: '7' } }] }))).toBe(true);
  });

  it('a text that is not JSON: a whole e-mail of theirs, or an id as a user key, names them; a 7 elsewhere does not', () => {
    expect(names('{"user": {"id": 12, "email": "ann@example.com"}, "score": ')).toBe(true);
    expect(names('{"user": {"id": 12, "email": "joann@example.com"}, "score": 7, ')).toBe(false);
    expect(names('{"user_id": 7, "score": ')).toBe(true);
    expect(names('{"user_id": "7", "score": ')).toBe(true);
    expect(names('{"user": {"email": "x@y.z", "id": 7}, ')).toBe(true);
    expect(names('{"user_id": 77, "score": 7, "order_index": 17, ')).toBe(false);
    expect(names('{"id": "7", "user_id": 8, ')).toBe(false);
  });
});
