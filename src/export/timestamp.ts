/**
 * The service's date-times as Parquet's TIMESTAMP(MICROS, UTC) takes them, and `--as-of`'s value: both
 * read by the mirror's one rule for times (store/model/times.ts).
 */
import { timeMicros } from '../store/model/times.js';

/** A date-time as microseconds since the epoch, UTC; null when it is not one (store/model/times.ts). */
export const timestampMicros = timeMicros;

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
