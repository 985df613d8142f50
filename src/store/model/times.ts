/**
 * The one form every time leaves the mirror in, on every backend: the instant in UTC, ISO 8601 with
 * a `Z`, to the millisecond as JavaScript writes it (`2026-03-02T09:15:04.120Z`), or to the
 * microsecond when the instant has them (`2026-03-02T09:15:04.120457Z`). A time is read from an
 * RFC 3339 date-time: `YYYY-MM-DD`, `T` (or `t`, or a space), `HH:MM`, optional seconds and
 * fraction, then `Z`, an offset (`±HH:MM`, `±HHMM` or `±HH`), or no zone at all, which is taken as
 * UTC (the service's score details carry none). Digits past the microsecond are cut (PostgreSQL
 * holds microseconds). Anything else, a date alone included, is not a time: null; so is an instant
 * outside the years 1 to 9999 UTC. `raw` keeps every time as served.
 */

const TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/** A time as whole milliseconds since the epoch (UTC) and the microseconds past them (0-999); null when it is not one. */
export function timeParts(text: string): { ms: number; micros: number } | null {
  const m = TIME.exec(text);
  if (m === null) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: that reads the years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month - 1, day);
  // A day past the month's end rolls over into the next month: not a date that exists.
  if (date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  const fraction = m[7] === undefined ? '000000' : m[7].length >= 6 ? m[7].slice(0, 6) : m[7].padEnd(6, '0');
  let ms = date.getTime() + Number(fraction.slice(0, 3));
  if (m[8] !== undefined) {
    const hours = Number(m[9]);
    const minutes = m[10] === undefined ? 0 : Number(m[10]);
    if (hours > 23 || minutes > 59) return null;
    const offset = (hours * 60 + minutes) * 60_000;
    ms += m[8] === '+' ? -offset : offset;
  }
  return { ms, micros: Number(fraction.slice(3)) };
}

/** A time's microseconds since the epoch, UTC (Parquet's TIMESTAMP(MICROS, UTC)); null when it is not a time. */
export function timeMicros(text: string): bigint | null {
  const p = timeParts(text);
  return p === null ? null : BigInt(p.ms) * 1000n + BigInt(p.micros);
}

/** The normal form of the instant `ms` + `micros`: milliseconds always, microseconds when there are any. */
function formatTime(ms: number, micros: number): string | null {
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return null;
  const iso = date.toISOString();
  // Years 1 to 9999 only: PostgreSQL reads no year 0, and a year of five digits is no longer ISO text.
  if (iso.length !== 24 || iso.startsWith('0000')) return null;
  return micros === 0 ? iso : `${iso.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

/**
 * A time in its normal form (above); null for anything that is not a time (NULL, a number, a date
 * alone, an impossible day). A text already in the normal form is returned as it is.
 */
export function normalTime(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  // Most times are served as JavaScript writes them: the normal form already, checked by a round trip.
  if (v.length === 24 && v.charCodeAt(23) === 90 && v.charCodeAt(10) === 84) {
    const t = Date.parse(v);
    if (!Number.isNaN(t) && new Date(t).toISOString() === v && !v.startsWith('0000')) return v;
  }
  const p = timeParts(v);
  return p === null ? null : formatTime(p.ms, p.micros);
}
