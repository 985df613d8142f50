/**
 * The service's date-times (ISO 8601, "2026-01-05T09:30:00.123Z") as microseconds since the epoch, UTC,
 * for Parquet's TIMESTAMP(MICROS, UTC). A value with no zone suffix (score details' `created_at` may
 * carry none) is read as UTC; a zone offset is applied; fractions beyond microseconds are cut.
 * Anything else (a date alone, a typo, an impossible day such as 02-30) is not a timestamp: null.
 */

const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$/;

export function timestampMicros(text: string): bigint | null {
  const m = ISO.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // A day past the month's end rolls over into the next month: not a date that exists.
  if (date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  let micros = BigInt(date.getTime()) * 1000n + BigInt((m[7] ?? '').padEnd(6, '0').slice(0, 6));
  if (m[9] !== undefined) {
    const offsetHours = Number(m[10]);
    const offsetMinutes = Number(m[11]);
    if (offsetHours > 23 || offsetMinutes > 59) return null;
    const offset = BigInt((offsetHours * 60 + offsetMinutes) * 60_000_000);
    micros += m[9] === '+' ? -offset : offset;
  }
  return micros;
}

/**
 * `--as-of`'s value as the mirror compares times: ISO 8601 in UTC to the millisecond (finer digits
 * cut, which keeps every comparison with the stored times). A date alone is its midnight UTC; a
 * date-time without a zone is read as UTC. Null when it is neither.
 */
export function asOfTime(text: string): string | null {
  const t = text.trim();
  const micros = timestampMicros(/^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00Z` : t);
  if (micros === null) return null;
  const ms = micros >= 0n ? micros / 1000n : (micros - 999n) / 1000n;
  const date = new Date(Number(ms));
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
