/**
 * store/model/erasure-plan.ts: the one answer, per row a backend reads, of what forget --user,
 * forget --older-than and a retention do to it (delete, rewrite with its new text, keep).
 */
import { describe, expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import { ErasurePlan, foundAny } from '../../../../src/store/model/erasure-plan.js';
import { knownPerson } from '../../../../src/store/model/person.js';
import { COLUMNS } from '../../../../src/store/model/rows.js';

const ANN = { id: 'a-1', email: 'ann@example.com' };
const BOB = { id: 'b-2', email: 'Bob@Example.com' };
const CUT = Date.parse('2026-03-01T00:00:00Z');

const bob = () => ErasurePlan.forPerson('bob@example.com', knownPerson([BOB.id], [BOB.email]));
const columns = (u: { id: string; email: string }) => ({ user_id: u.id, user_email: u.email });
const session = (id: string, u: { id: string; email: string }) => ({ id, campaign_id: 'c1', order_index: '7', ...columns(u) });
const role = (id: string, u: { id: string; email: string }) => ({ ...session(id, u), report_type: 'DETAILED' });
const detail = (id: string, parent: string, u: { id: string; email: string }) => ({
  id,
  role_result_id: parent,
  campaign_id: 'c1',
  position: 2,
  ...columns(u),
});
/** A row's value of `column` in rows.ts's order (the key last). */
const at = (table: keyof typeof COLUMNS, values: unknown[], column: string) => values[COLUMNS[table].indexOf(column as never)];

describe('a person', () => {
  it('their results go, each counted against its stream; another holding their e-mail is rewritten, every column from its new text', () => {
    const plan = bob();
    expect(plan.session(session('s1', BOB), { id: 's1', user: BOB })).toEqual({ do: 'delete' });
    expect(plan.role(role('r1', ANN), { id: 'r1', user: BOB })).toEqual({ do: 'delete' });
    const quoted = { id: 's2', user: ANN, scenario: { name: 'BOB@example.com' }, feedback: { by: BOB } };
    const f = plan.session(session('s2', ANN), quoted);
    expect(f.do).toBe('rewrite');
    const values = f.do === 'rewrite' ? f.values : [];
    expect(at('session_results', values, 'scenario_name')).toBe('[erased]');
    expect(at('session_results', values, 'feedback')).toBe('{}');
    expect(at('session_results', values, 'order_index')).toBe(7n);
    expect(at('session_results', values, 'raw')).toBe(toJson({ id: 's2', user: ANN, scenario: { name: '[erased]' }, feedback: {} }));
    expect(values.at(-1)).toBe('s2');
    expect(plan.session(session('s3', ANN), { id: 's3', user: ANN })).toEqual({ do: 'keep' });
    expect([...plan.removedStreams()]).toEqual([
      ['c1/session', 1],
      ['c1/role/DETAILED', 1],
    ]);
    expect(plan.examplesErased()).toEqual(['s1', 'r1']);
  });

  it('their score detail in another result goes; one under a result that went is left to its result', () => {
    const plan = bob();
    plan.role(role('r1', BOB), { id: 'r1', user: BOB });
    expect(plan.detail(detail('d1', 'r1', BOB), { id: 'd1', user: BOB })).toEqual({ do: 'keep' });
    expect(plan.detail(detail('d2', 'r2', BOB), { id: 'd2', user: BOB })).toEqual({ do: 'delete' });
    const f = plan.detail(detail('d3', 'r2', ANN), { id: 'd3', user: ANN, notes: [BOB.email] });
    expect(f.do === 'rewrite' && f.values.slice(-3)).toEqual([toJson({ id: 'd3', user: ANN, notes: ['[erased]'] }), 2, 'd3']);
  });

  it('every version of a record of theirs goes (by any version, or its current row); others are kept without them', () => {
    const plan = bob();
    plan.role(role('r1', BOB), { id: 'r1', user: BOB });
    const versions = plan.versions<{ kind: string; id: string; user_id: string | null; user_email: string | null; n: number }>();
    const v = (kind: string, id: string, u: { id: string; email: string } | null, n: number) => ({
      kind,
      id,
      user_id: u?.id ?? null,
      user_email: u?.email ?? null,
      n,
    });
    versions.add(v('session', 's1', ANN, 1), { id: 's1', user: ANN, notes: [BOB.email] });
    // An older version of s1 named Bob at its top: every version of s1 is theirs.
    versions.add(v('session', 's1', BOB, 2), { id: 's1', user: BOB });
    versions.add(v('role', 'r1', null, 1), undefined);
    versions.add(v('session', 's2', ANN, 1), { id: 's2', user: ANN, notes: [BOB.email] });
    versions.add(v('session', 's3', ANN, 1), { id: 's3', user: ANN });
    const { records, rewrite } = versions.done();
    expect(records).toEqual([
      { kind: 'role', id: 'r1' },
      { kind: 'session', id: 's1' },
    ]);
    expect(rewrite.map((r) => [r.row.id, r.text])).toEqual([['s2', toJson({ id: 's2', user: ANN, notes: ['[erased]'] })]]);
  });

  it('the quarantine by its record or its text as received, the error texts by what forget was given', () => {
    const plan = bob();
    expect(plan.quarantined('{"user":{"id":"b-2"},"score":"high"}')).toEqual({ do: 'delete' });
    expect(plan.quarantined('not json, but bob@example.com')).toEqual({ do: 'delete' });
    expect(plan.quarantined('{"user":{"id":"a-1"}}')).toEqual({ do: 'keep' });
    expect(
      plan.errorTexts([
        { stream: 'c1/session', last_error: 'record of bob@example.com failed' },
        { stream: 'c2/session', last_error: 'timeout' },
      ]),
    ).toEqual([{ stream: 'c1/session', last_error: 'record of [erased] failed' }]);
    expect([plan.readsDetails, plan.readsVersions, plan.readsQuarantine, plan.readsErrors, plan.readsCopies]).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
  });

  it('an NDJSON line: theirs goes, another is rewritten without them', () => {
    const plan = bob();
    expect(plan.line({ id: 's1', user: BOB })).toEqual({ do: 'delete' });
    expect(plan.line({ id: 'r2', user: ANN, score_details: [{ id: 'd', user: BOB }] })).toEqual({
      do: 'rewrite',
      text: toJson({ id: 'r2', user: ANN, score_details: [] }),
    });
    expect(plan.line('not a record')).toEqual({ do: 'keep' });
  });
});

describe('a cut', () => {
  it('results dated before it go; score details, versions, the quarantine and error texts are not read by person', () => {
    const plan = ErasurePlan.olderThan(CUT);
    expect(plan.session(session('s1', ANN), { created_at: '2026-02-01T00:00:00Z' })).toEqual({ do: 'delete' });
    expect(plan.role(role('r1', ANN), { created_at: '2026-04-01T00:00:00Z' })).toEqual({ do: 'keep' });
    expect(plan.role(role('r2', ANN), {})).toEqual({ do: 'keep' });
    expect([plan.readsDetails, plan.readsVersions, plan.readsQuarantine, plan.readsErrors, plan.readsCopies]).toEqual([
      false,
      false,
      false,
      false,
      true,
    ]);
    expect(plan.detail(detail('d1', 'r9', ANN), { created_at: '2000-01-01T00:00:00Z' })).toEqual({ do: 'keep' });
    expect(plan.errorTexts([{ stream: 'c1/session', last_error: 'ann@example.com' }])).toEqual([]);
  });

  it("a copy goes with its record, by its text's date, or, undated, by when it was stored", () => {
    const plan = ErasurePlan.olderThan(CUT);
    plan.session(session('s1', ANN), { created_at: '2026-02-01T00:00:00Z' });
    const young = { created_at: '2026-04-01T00:00:00Z' };
    expect(plan.copy({ record_id: 's1', stored: '2026-05-01T00:00:00Z' }, young)).toEqual({ do: 'delete' });
    expect(plan.copy({ record_id: 'x', stored: '2026-05-01T00:00:00Z' }, { created_at: '2026-02-01T00:00:00Z' })).toEqual({
      do: 'delete',
    });
    expect(plan.copy({ record_id: null, stored: '2026-02-01T00:00:00+00:00' }, undefined)).toEqual({ do: 'delete' });
    expect(plan.copy({ record_id: 'x', stored: '2026-02-01T00:00:00Z' }, young)).toEqual({ do: 'keep' });
    expect(plan.copy({ record_id: null, stored: null }, undefined)).toEqual({ do: 'keep' });
  });
});

it('foundAny: rows removed or rewritten, copies, error texts or files; nothing else', () => {
  const none = {
    session_results: 0,
    role_results: 0,
    score_details: 0,
    eval_results: 0,
    records_changed: 0,
    result_versions: 0,
    error_texts: 0,
  };
  expect(foundAny(none, {})).toBe(false);
  expect(foundAny({ ...none, eval_results: 3 }, {})).toBe(false);
  expect(foundAny(none, { quarantine: 1 })).toBe(true);
  expect(foundAny({ ...none, error_texts: 1 }, {})).toBe(true);
  expect(foundAny(none, {}, 1)).toBe(true);
});
