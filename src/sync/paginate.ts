/**
 * The paging decision (PRODUCT.md §4), as one pure function: after a page, either the stream is done
 * or the next request goes out with this cursor. The cursor is the envelope's `last_record_index`
 * (or `last_record_id`, which one guide names), else the last record's `order_index`. A page that
 * says there is more but cannot move the cursor forward stops the stream with an error: never an
 * endless loop.
 */
import { toInt64 } from '../core/int64.js';
import { DataError } from '../errors.js';
import { show } from './records.js';

/** What a page says about paging. */
export interface PageEnvelope {
  has_more: boolean;
  last_record_index?: unknown;
  last_record_id?: unknown;
}

export interface PageFacts {
  /** Names the request in errors, e.g. `GET /v1/campaigns/role/results (campaign …), page 3`. */
  where: string;
  /** The cursor this page was asked for with (`starting_after`), if any. */
  sent: bigint | undefined;
  /** How many records passed the identity rules. */
  records: number;
  /** The `order_index` of the page's last record. */
  last: bigint | undefined;
}

export type PagingStep = { done: true } | { done: false; next: bigint };

/** The envelope's cursor for the next page, if it names one. */
function envelopeCursor(page: PageEnvelope, where: string): bigint | undefined {
  for (const field of ['last_record_index', 'last_record_id'] as const) {
    const value = page[field];
    if (value === undefined || value === null) continue;
    const cursor = toInt64(value);
    if (cursor === undefined) throw new DataError(`${where}: ${field}: ${show(value)} is not a non-negative int64`);
    return cursor;
  }
  return undefined;
}

/** Decides what follows a page; throws a DataError when following it could loop forever. */
export function nextStep(page: PageEnvelope, facts: PageFacts): PagingStep {
  const { where, sent, last } = facts;
  // A bad cursor field is an error even on the last page: the envelope is not what it claims.
  const next = envelopeCursor(page, where) ?? last;
  if (!page.has_more) return { done: true };
  if (facts.records === 0) {
    throw new DataError(`${where}: has_more is true but the page is empty; stopped to avoid an endless loop`);
  }
  if (next === undefined || (sent !== undefined && next <= sent) || (last !== undefined && next < last)) {
    throw new DataError(
      `${where}: the cursor did not advance (sent ${sent ?? 'none'}, page ends at ${last ?? 'none'}, next ${next ?? 'none'}); stopped to avoid an endless loop`,
    );
  }
  return { done: false, next };
}
