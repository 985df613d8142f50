import { calendarDateProblem } from '../core/date.js';
import type { Rate } from '../core/rate.js';
import { UsageError } from '../errors.js';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/** Parses `500ms`, `30s`, `2m`, `1.5h`, `1d` into milliseconds. `what` names the setting in the error. */
export function parseDuration(text: string, what: string): number {
  const m = DURATION.exec(text.trim());
  // A bare number (`--timeout 30`, `--timeout 0`): say what is missing rather than "not a duration".
  if (!m && /^\d+(?:\.\d+)?$/.test(text.trim())) {
    throw new UsageError(`${what}: "${text}" needs a unit: ms, s, m, h or d (examples: 500ms, 30s, 2m, 1h, 1d)`);
  }
  if (!m) throw new UsageError(`${what}: "${text}" is not a duration (examples: 500ms, 30s, 2m, 1h, 1d)`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (!(ms > 0) || !Number.isFinite(ms)) throw new UsageError(`${what}: "${text}" must be more than zero`);
  // Whole milliseconds: 0.4ms would round to no time at all (a rate of 2/0.4ms then had no limit).
  if (Math.round(ms) === 0) throw new UsageError(`${what}: "${text}" is under a millisecond; give 1ms or more`);
  return Math.round(ms);
}

/** Unit words people type in a rate (`100/minute`), as the duration units. */
const UNIT_WORDS: Record<string, string> = {
  second: 's',
  seconds: 's',
  sec: 's',
  secs: 's',
  minute: 'm',
  minutes: 'm',
  min: 'm',
  mins: 'm',
  hour: 'h',
  hours: 'h',
  hr: 'h',
  day: 'd',
  days: 'd',
};

/** Parses `100`, `100/1m`, `20/2s`, `5/s`, `100/minute`. A bare number means per minute. */
export function parseRate(text: string, what: string): Rate {
  const bad = () => new UsageError(`${what}: "${text}" is not a rate (examples: 100, 100/1m, 100/minute, 20/2s)`);
  const m = /^(\d+)(?:\/(.+))?$/.exec(text.trim());
  if (!m) throw bad();
  const count = Number(m[1]);
  if (count > Number.MAX_SAFE_INTEGER) throw new UsageError(`${what}: "${text}" is more requests than can be counted (at most 2^53 - 1)`);
  if (!Number.isSafeInteger(count) || count < 1) throw new UsageError(`${what}: "${text}" needs at least 1 request`);
  const given = (m[2] ?? '1m').trim().toLowerCase();
  const word = /^(\d*(?:\.\d+)?)\s*([a-z]+)$/.exec(given);
  const unit = word ? `${word[1] || '1'}${UNIT_WORDS[word[2] as string] ?? word[2]}` : given;
  try {
    return { count, windowMs: parseDuration(unit, what) };
  } catch {
    throw bad();
  }
}

/** Parses a `YYYY-MM-DD` calendar date (checked to exist) and returns it unchanged. */
export function parseDate(text: string, what: string): string {
  const problem = calendarDateProblem(text);
  if (problem !== undefined) throw new UsageError(`${what}: ${problem}`);
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
