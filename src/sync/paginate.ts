/**
 * The paging decision, as one pure function: after a page, either the stream is done
 * or the next request goes out with this cursor. The cursor is the envelope's `last_record_index`
 * (or `last_record_id`, which one guide names), else the last record's `order_index`. A page that
 * says there is more but cannot move the cursor forward stops the stream with an error: never an
 * endless loop.
 *
 * A bare-array page (the session reference's sample: no envelope, so no `has_more`) follows the
 * full-page rule: a page as long as the `limit` asked for may have more after it; a shorter one,
 * or an empty one, is the end.
 */
import { toInt64 } from '../core/int64.js';
import type { Redact } from '../core/redact.js';
import { DataError, reasonAt } from '../errors.js';
import { show } from './records.js';

/** What a page says about paging. */
export interface PageEnvelope {
  /** The envelope's `has_more`; undefined for a bare-array page, which pages by the full-page rule. */
  has_more: boolean | undefined;
  last_record_index?: unknown;
  last_record_id?: unknown;
}

export interface PageFacts {
  /** Names the page in errors, after their reason (errors.ts reasonAt), e.g. `page 3, GET /v1/campaigns/role/results (campaign …)`. */
  where: string;
  /** The cursor this page was asked for with (`starting_after`), if any. */
  sent: bigint | undefined;
  /** How many records passed the identity rules. */
  records: number;
  /** The `order_index` of the page's last record. */
  last: bigint | undefined;
  /** The `limit` the page was asked for with: a bare-array page cannot be paged without it. */
  limit?: number | undefined;
  /** Takes the key out of the values an error quotes (core/redact.ts). */
  redact: Redact;
}

export type PagingStep = { done: true } | { done: false; next: bigint };

/** The envelope's cursor for the next page, if it names one. */
export function envelopeCursor(page: PageEnvelope, where: string, redact: Redact): bigint | undefined {
  for (const field of ['last_record_index', 'last_record_id'] as const) {
    const value = page[field];
    if (value === undefined || value === null) continue;
    const cursor = toInt64(value);
    if (cursor === undefined) throw new DataError(reasonAt(`${field}: ${show(value, redact)} is not a non-negative int64`, where));
    return cursor;
  }
  return undefined;
}

/** Decides what follows a page; throws a DataError when following it could loop forever. */
export function nextStep(page: PageEnvelope, facts: PageFacts): PagingStep {
  const { where, sent, last } = facts;
  // A bad cursor field is an error even on the last page: the envelope is not what it claims.
  const next = envelopeCursor(page, where, facts.redact) ?? last;
  if (page.has_more === undefined) return fullPageStep(facts);
  if (!page.has_more) return { done: true };
  if (facts.records === 0) {
    throw new DataError(reasonAt('has_more is true but the page is empty; stopped to avoid an endless loop', where));
  }
  if (next === undefined || (sent !== undefined && next <= sent) || (last !== undefined && next < last)) {
    throw new DataError(
      reasonAt(
        `the cursor did not advance (sent ${sent ?? 'none'}, page ends at ${last ?? 'none'}, next ${next ?? 'none'}); stopped to avoid an endless loop`,
        where,
      ),
    );
  }
  return { done: false, next };
}

/** A bare-array page: more may follow only a full page, and then after its last record. */
function fullPageStep(facts: PageFacts): PagingStep {
  const { where, sent, last, limit } = facts;
  if (limit === undefined)
    throw new DataError(reasonAt('a page without has_more cannot be paged without the limit it was asked for', where));
  // A short page is the end; so is an empty page after a full one (a clean end, not the has_more error).
  if (facts.records < limit || last === undefined) return { done: true };
  if (sent !== undefined && last <= sent) {
    throw new DataError(
      reasonAt(`the cursor did not advance (sent ${sent}, page ends at ${last}); stopped to avoid an endless loop`, where),
    );
  }
  return { done: false, next: last };
}
