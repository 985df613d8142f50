import { describe, expect, it } from 'vitest';
import { timestampMicros } from '../../../src/export/timestamp.js';

const utc = (...parts: [number, number, number, number?, number?, number?, number?]) => BigInt(Date.UTC(...parts)) * 1000n;

describe('timestamps for Parquet (export/timestamp.ts)', () => {
  it('reads ISO 8601 date-times as UTC microseconds: Z, offsets, no zone (UTC), fractions to the microsecond', () => {
    expect(timestampMicros('2026-01-05T09:30:00Z')).toBe(utc(2026, 0, 5, 9, 30));
    expect(timestampMicros('2026-01-05T09:30:00.123Z')).toBe(utc(2026, 0, 5, 9, 30, 0, 123));
    expect(timestampMicros('2026-01-05T09:30:00.123456Z')).toBe(utc(2026, 0, 5, 9, 30, 0, 123) + 456n);
    // Nanoseconds are cut to microseconds, never rounded into the next second.
    expect(timestampMicros('2026-01-05T09:30:59.999999999Z')).toBe(utc(2026, 0, 5, 9, 30, 59, 999) + 999n);
    expect(timestampMicros('2026-01-05T09:30:00+02:00')).toBe(utc(2026, 0, 5, 7, 30));
    expect(timestampMicros('2026-01-05T09:30:00-0530')).toBe(utc(2026, 0, 5, 15, 0));
    expect(timestampMicros('2026-01-05T09:30:00.5')).toBe(utc(2026, 0, 5, 9, 30, 0, 500));
    expect(timestampMicros('2026-01-05 09:30')).toBe(utc(2026, 0, 5, 9, 30));
    expect(timestampMicros('1969-12-31T23:59:59.999999Z')).toBe(-1n);
    expect(timestampMicros('2024-02-29T00:00:00Z')).toBe(utc(2024, 1, 29));
  });

  it('anything else is not a timestamp', () => {
    for (const text of [
      '',
      'last Tuesday',
      '2026-01-05',
      '2026-02-30T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-05T24:00:00Z',
      '2026-01-05T09:30:00+25:00',
      '2026-01-05T09:30:00Zjunk',
      ' 2026-01-05T09:30:00Z',
    ]) {
      expect(timestampMicros(text), text).toBeNull();
    }
  });
});
