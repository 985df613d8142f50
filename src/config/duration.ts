import type { Rate } from '../core/rate.js';
import { UsageError } from '../errors.js';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/** Parses `500ms`, `30s`, `2m`, `1.5h`, `1d` into milliseconds. `what` names the setting in the error. */
export function parseDuration(text: string, what: string): number {
  const m = DURATION.exec(text.trim());
  if (!m) throw new UsageError(`${what}: "${text}" is not a duration (examples: 500ms, 30s, 2m, 1h, 1d)`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (!(ms > 0) || !Number.isFinite(ms)) throw new UsageError(`${what}: "${text}" must be more than zero`);
  return Math.round(ms);
}

/** Parses `100`, `100/1m`, `20/2s`, `5/s`. A bare number means per minute. */
export function parseRate(text: string, what: string): Rate {
  const m = /^(\d+)(?:\/(.+))?$/.exec(text.trim());
  if (!m) throw new UsageError(`${what}: "${text}" is not a rate (examples: 100, 100/1m, 20/2s)`);
  const count = Number(m[1]);
  if (!Number.isSafeInteger(count) || count < 1) throw new UsageError(`${what}: "${text}" needs at least 1 request`);
  const unit = m[2] ?? '1m';
  const windowMs = parseDuration(/^\d/.test(unit) ? unit : `1${unit}`, what);
  return { count, windowMs };
}

/** Parses a `YYYY-MM-DD` calendar date (checked to exist) and returns it unchanged. */
export function parseDate(text: string, what: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const d = m ? new Date(`${text}T00:00:00Z`) : undefined;
  if (!m || !d || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== text) {
    throw new UsageError(`${what}: "${text}" is not a date in the form YYYY-MM-DD`);
  }
  return text;
}

/** Parses a whole number in [min, max]. */
export function parseIntIn(text: string, what: string, min: number, max: number): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${what}: "${text}" must be a whole number from ${min} to ${max}`);
  }
  return n;
}
