/**
 * What an erasure removes, for every store (SQLite rows, NDJSON lines, PostgreSQL rows): the records
 * that name a person (`forget --user`, store/model/person.ts), or the records dated before a cut
 * (`forget --older-than`, a `retention` setting). One rule, one code path: each store walks its
 * records once and asks the erasure plan (store/model/erasure-plan.ts), which asks `judge`, what to
 * do with each.
 *
 * A record's date is the assessment's own, as the service gives it: `created_at`, else `updated_at`
 * (a time without a zone, as score details carry, is UTC). A record with neither is kept: the mirror
 * keeps no time of its own per record, and a date it cannot read must not erase what a user keeps.
 * Only results are dated this way: their score details and eval results go with them, whatever their
 * own dates say.
 */
import { names, type Person, type Scrubbed, scrubPerson } from './person.js';

/** Whom and what an erasure removes; either part may be absent (an empty rule removes nothing). */
export interface EraseRule {
  /** Records naming this person go whole; others' records holding them are kept without them. */
  person?: Person | undefined;
  /** Records dated before this instant (ms since the epoch) go whole. */
  before?: number | undefined;
}

const WHOLE: Scrubbed = Object.freeze({ kind: 'whole' });
const NONE: Scrubbed = Object.freeze({ kind: 'none' });

/** A date-time without a zone (`2026-03-01T10:00:00.123`): read as UTC, not as the machine's local time. */
const NO_ZONE = /T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

/** An ISO 8601 text as ms since the epoch; undefined when it is not one. */
export function instant(text: unknown): number | undefined {
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  const t = text.trim();
  const ms = Date.parse(NO_ZONE.test(t) ? `${t}Z` : t);
  return Number.isFinite(ms) ? ms : undefined;
}

/** A record's date: its `created_at`, else its `updated_at`; undefined when it has neither (or no readable one). */
export function recordTime(record: unknown): number | undefined {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return undefined;
  const r = record as Record<string, unknown>;
  return instant(r.created_at) ?? instant(r.updated_at);
}

/** Whether a record is dated before `before` (an undated one never is). */
export function olderThan(record: unknown, before: number): boolean {
  const t = recordTime(record);
  return t !== undefined && t < before;
}

/**
 * What the rule does to a record: `whole` (it goes), `part` (another's record kept without the
 * person: changed in place), or `none`. `columns`: the row's own user columns, where a table has them
 * (they name the same person as the record, unless changed by hand).
 */
export function judge(record: unknown, rule: EraseRule, columns?: { user_id: unknown; user_email: unknown }): Scrubbed {
  if (rule.before !== undefined && olderThan(record, rule.before)) return WHOLE;
  const p = rule.person;
  if (p === undefined) return NONE;
  if (columns !== undefined && names(columns as Record<string, unknown>, p)) return WHOLE;
  return scrubPerson(record, p);
}

/** The rule for what lives inside a result (score details): the person alone, never a date. */
export function innerRule(rule: EraseRule): EraseRule {
  return { person: rule.person };
}

/** Whether the rule can remove anything. */
export function isEmpty(rule: EraseRule): boolean {
  return rule.person === undefined && rule.before === undefined;
}
