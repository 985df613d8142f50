import { describe, expect, it } from 'vitest';
import { normalTime, timeMicros } from '../../../../src/store/model/times.js';

describe('the one form times leave the mirror in (store/model/times.ts)', () => {
  it('is UTC with a Z, to the millisecond, or to the microsecond when the instant has them', () => {
    const cases: Array<[string, string]> = [
      ['2026-03-01T10:00:00.123Z', '2026-03-01T10:00:00.123Z'],
      ['2026-03-01T10:00:00Z', '2026-03-01T10:00:00.000Z'],
      ['2026-03-01T10:00:00.1z', '2026-03-01T10:00:00.100Z'],
      ['2026-03-01t10:00:00.123400Z', '2026-03-01T10:00:00.123400Z'],
      ['2026-03-01T10:00:00.123000Z', '2026-03-01T10:00:00.123Z'],
      ['2026-03-01T12:00:00.123457+02:00', '2026-03-01T10:00:00.123457Z'],
      ['2026-03-01T04:30:00.123456789-05:30', '2026-03-01T10:00:00.123456Z'],
      ['2026-03-01T12:00:00+0200', '2026-03-01T10:00:00.000Z'],
      ['2026-03-01T12:00:00+02', '2026-03-01T10:00:00.000Z'],
      // No zone: UTC.
      ['2026-03-01T10:00:00', '2026-03-01T10:00:00.000Z'],
      ['2026-03-01 10:00:00.0004', '2026-03-01T10:00:00.000400Z'],
      ['2026-03-01T10:00', '2026-03-01T10:00:00.000Z'],
      // An offset that crosses midnight, a leap day, before 1970.
      ['2026-03-01T01:00:00+02:00', '2026-02-28T23:00:00.000Z'],
      ['2024-02-29T23:59:59.9999999Z', '2024-02-29T23:59:59.999999Z'],
      ['1969-12-31T23:59:59.999999Z', '1969-12-31T23:59:59.999999Z'],
      ['0050-01-01T00:00:00Z', '0050-01-01T00:00:00.000Z'],
    ];
    for (const [served, normal] of cases) {
      expect(normalTime(served), served).toBe(normal);
      // The normal form is a fixed point, and the same instant Parquet writes.
      expect(normalTime(normal), normal).toBe(normal);
      expect(timeMicros(normal), normal).toBe(timeMicros(served));
    }
  });

  it('is null for what is not a time: a date alone, an impossible day, another grammar, a year 0', () => {
    for (const v of [
      null,
      undefined,
      0,
      '',
      'last Tuesday',
      '2026-03-01',
      '2026-02-30T10:00:00Z',
      '2026-02-30T10:00:00.000Z',
      '2026-03-01T24:00:00.000Z',
      '2026-03-01T10:60:00Z',
      '2026-03-01T10:00:60Z',
      '2026-03-01T10:00:00,5Z',
      '2026-03-01T10:00:00+25:00',
      '2026-03-01T10:00:00.Z',
      ' 2026-03-01T10:00:00Z',
      '0000-01-01T00:00:00.000Z',
      '0000-01-01T01:00:00+02:00',
    ]) {
      expect(normalTime(v), String(v)).toBeNull();
    }
  });
});
