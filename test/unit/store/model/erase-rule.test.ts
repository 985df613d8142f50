/**
 * The erasure's rule (store/model/erase-rule.ts) and when a retention is due (store/model/retention.ts):
 * a result's date is its created_at, else its updated_at, a time without a zone being UTC; an undated
 * result is kept; a retention runs again once a day has passed since the time the mirror keeps.
 */
import { describe, expect, it } from 'vitest';
import { judge, olderThan, recordTime } from '../../../../src/store/model/erase-rule.js';
import { knownPerson } from '../../../../src/store/model/person.js';
import { retentionDue } from '../../../../src/store/model/retention.js';

const CUT = Date.parse('2026-03-01T00:00:00Z');

describe('a record older than a cut', () => {
  it('is dated by created_at, else updated_at; a time without a zone is UTC', () => {
    expect(recordTime({ created_at: '2026-02-28T23:59:59.999+00:00', updated_at: '2026-06-01T00:00:00Z' })).toBe(CUT - 1);
    expect(recordTime({ updated_at: '2026-02-28T23:00:00' })).toBe(CUT - 3_600_000);
    expect(recordTime({ created_at: 'soon', updated_at: '2026-03-01' })).toBe(CUT);
    expect(recordTime({ created_at: '2026-03-01T01:00:00+01:00' })).toBe(CUT);
    expect(olderThan({ created_at: '2026-02-28T23:59:59Z' }, CUT)).toBe(true);
    expect(olderThan({ created_at: '2026-03-01T00:00:00Z' }, CUT)).toBe(false);
  });

  it('without a readable date is kept', () => {
    for (const r of [{}, { created_at: null }, { created_at: 'yesterday' }, 'text', null, [{ created_at: '2000-01-01' }]])
      expect(olderThan(r, CUT), JSON.stringify(r)).toBe(false);
  });

  it('one rule: older goes whole, the person as forget --user takes them, both when both are given', () => {
    const person = knownPerson(['u1'], ['a@example.com']);
    const old = { created_at: '2000-01-01T00:00:00Z', user: { id: 'u2' } };
    const young = { created_at: '2099-01-01T00:00:00Z', user: { id: 'u2' }, notes: ['a@example.com'] };
    expect(judge(old, { before: CUT }).kind).toBe('whole');
    expect(judge(young, { before: CUT }).kind).toBe('none');
    expect(judge(young, { person }).kind).toBe('part');
    expect(judge({ created_at: '2099-01-01T00:00:00Z' }, { person }, { user_id: 'u1', user_email: null }).kind).toBe('whole');
    expect(judge(old, {}).kind).toBe('none');
  });
});

describe('a retention', () => {
  const DAY = 86_400_000;
  it('is due when it never ran, a day after it last ran, or when its time is unreadable or ahead of the clock', () => {
    const now = Date.parse('2026-11-28T12:00:00Z');
    expect(retentionDue(undefined, now)).toBe(true);
    expect(retentionDue(new Date(now - DAY + 1).toISOString(), now)).toBe(false);
    expect(retentionDue(new Date(now - DAY).toISOString(), now)).toBe(true);
    expect(retentionDue(new Date(now + 60_000).toISOString(), now)).toBe(true);
    expect(retentionDue('garbage', now)).toBe(true);
  });
});
