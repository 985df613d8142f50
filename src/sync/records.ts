/**
 * The rules of a record, checked on every record of a page before anything of the page is written:
 * a usable `id`, an int64 `order_index` past the cursor and rising, the stream's campaign id
 * (`campaign.id`, or a flat record's `campaign_id`), scores that are numbers, and what every backend
 * can store (store/model/storable.ts unstorable: depth, numbers, U+0000, indexed values' lengths).
 * A record that fails them is quarantined (store/sqlite/quarantine.ts) and the page goes on, on
 * every sink alike; a page that fails as a whole (records going backwards, an id twice) stops its
 * stream. Everything else is lenient and kept as sent.
 *
 * Hand-written rather than zod: this runs on every record; one walk of each record, which copies nothing.
 */
import { toInt64 } from '../core/int64.js';
import { NumberText, toJson } from '../core/json.js';
import { type Redact, shorten } from '../core/redact.js';
import type { CheckedRecord } from '../core/types.js';
import { DataError, reasonAt } from '../errors.js';
import { unstorable } from '../store/model/storable.js';

/**
 * Longest id accepted. The spec's ids are UUIDs (36 characters); anything past a few hundred is not an
 * id but a bug or an attack, and it would be stored, indexed and printed in every error about it.
 */
const MAX_ID_LENGTH = 200;

/** U+0000, or a lone surrogate: what no backend stores in an id as it is (store/model/quarantine.ts). */
const UNSTORABLE_IN_ID = /[\0\p{Cs}]/u;

/** An id a record can be stored, indexed and named by: 1 to MAX_ID_LENGTH characters, none of them unstorable. */
function usableId(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH && !UNSTORABLE_IN_ID.test(v) ? v : undefined;
}

/** How a bad value from the service reads in an error message: without the key, then cut to 40 characters. */
export function show(value: unknown, redact: Redact): string {
  if (value === undefined) return 'missing';
  if (value instanceof NumberText) return `${redact(value.text)} (not an integer)`;
  if (typeof value === 'bigint') return value.toString();
  return shorten(redact(JSON.stringify(value) ?? String(value)), 40);
}

/**
 * A checked record whose JSON text is made on first use: the SQLite mirror stores a DETAILED record
 * in parts (store/model/compact.ts) and reads the whole text only when a stored copy must be compared, so
 * a pull does not stringify every record twice.
 */
class Checked implements CheckedRecord {
  private text: string | undefined;

  constructor(
    readonly record: Record<string, unknown>,
    readonly id: string,
    readonly orderIndex: bigint,
  ) {}

  get raw(): string {
    if (this.text === undefined) this.text = toJson(this.record);
    return this.text;
  }
}

export interface PageContext {
  /** Names the page, after a reason (errors.ts reasonAt), e.g. `page 3, GET /v1/campaigns/role/results (campaign …)`. */
  where: string;
  campaignId: string;
  /** The cursor sent with the request: every record must come after it. */
  after: bigint | undefined;
  /** Takes the key out of the values an error quotes (core/redact.ts). */
  redact: Redact;
  /**
   * Whether a string of the page may hold U+0000 or a lone surrogate (store/model/quarantine.ts
   * mayHoldUnstorable of its body); when not, strings are not tested one by one. Default: they may.
   */
  strings?: boolean | undefined;
}

/** A record that failed the record rules: where it sat in the page, and why. */
export interface RecordFault {
  /** Its index in the page's `data`. */
  index: number;
  /** The message naming the request, the record's position and the field at fault (without the key). */
  reason: string;
  /** Its id, when it has a usable one. */
  id: string | undefined;
  /** Its order_index, when it is a usable int64. */
  orderIndex: bigint | undefined;
}

/** A page sorted by the rules: the records that pass them, and those that do not. */
export interface SortedPage {
  records: CheckedRecord[];
  faults: RecordFault[];
  /** The highest usable order_index of the page, of a record that passed or not. */
  last: bigint | undefined;
  /** Whether a record after the one holding `last` had no usable order_index (the envelope must say where the page ends). */
  tailUnknown: boolean;
}

/**
 * The fields that fill a REAL column (store/model/rows.ts `real`): a number, a numeric string, null
 * or absent; anything else (a word, an object, a boolean) is the wrong type and fails the record.
 */
const SCORE_FIELDS = ['score', 'overall_score', 'scenario_score'] as const;

function scoreFault(record: Record<string, unknown>): string | undefined {
  for (const field of SCORE_FIELDS) {
    const v = record[field];
    if (v === undefined || v === null || typeof v === 'number' || v instanceof NumberText) continue;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) continue;
    return field;
  }
  return undefined;
}

/**
 * Sorts a page's records by the rules. A fault of one record (no usable id or order_index, another
 * campaign's id, a score of the wrong type) is returned beside the others; a fault of the page as a
 * whole throws a DataError: records not in ascending order_index past the cursor, or one id twice.
 */
export function sortPage(data: unknown[], ctx: PageContext): SortedPage {
  const records: CheckedRecord[] = [];
  const faults: RecordFault[] = [];
  let previous = ctx.after;
  let last: bigint | undefined;
  let tailUnknown = false;
  // Only a page with a repeated id pays for more than the Set.
  const ids = new Set<string>();
  for (let i = 0; i < data.length; i++) {
    const record = data[i] as Record<string, unknown>;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      faults.push({
        index: i,
        reason: reasonAt('not an object', recordAt(ctx, i, data.length, undefined)),
        id: undefined,
        orderIndex: undefined,
      });
      tailUnknown = true;
      continue;
    }
    const id = usableId(record.id);
    const orderIndex = toInt64(record.order_index);
    if (orderIndex === undefined) tailUnknown = true;
    else {
      if (previous !== undefined && orderIndex <= previous) {
        throw new DataError(
          reasonAt(
            `order_index: ${orderIndex} does not come after ${previous} (records must arrive in ascending order_index past the cursor)`,
            recordAt(ctx, i, data.length, id),
          ),
        );
      }
      previous = orderIndex;
      last = orderIndex;
      tailUnknown = false;
    }
    if (id !== undefined) {
      if (ids.has(id)) throw new DataError(reasonAt(`id ${id} is served twice in one page`, recordAt(ctx, i, data.length, id)));
      ids.add(id);
    }
    const reason = recordFault(record, id, orderIndex, ctx);
    if (reason !== undefined) faults.push({ index: i, reason: reasonAt(reason, recordAt(ctx, i, data.length, id)), id, orderIndex });
    else records.push(new Checked(record, id as string, orderIndex as bigint));
  }
  return { records, faults, last, tailUnknown };
}

/**
 * Where a record sits, for a message about it: its place in the page, its id, and the page. Made
 * only for a record at fault: a page of good records builds no message.
 */
function recordAt(ctx: PageContext, i: number, of: number, id: string | undefined): string {
  return `record ${i + 1} of ${of}${id === undefined ? '' : ` (id ${id})`}, ${ctx.where}`;
}

/** Why one record fails the rules (the field at fault, and why), or undefined when it passes. */
function recordFault(
  record: Record<string, unknown>,
  id: string | undefined,
  orderIndex: bigint | undefined,
  ctx: PageContext,
): string | undefined {
  // First: a record too deep for the lossless parser was read by JSON.parse (core/json-bytes.ts
  // parseDeep), whose order_index may be rounded; what is wrong with it is its depth.
  const cannot = unstorable(record, ctx.strings !== false);
  if (cannot !== undefined) return ctx.redact(cannot);
  if (id === undefined)
    return `id: ${show(record.id, ctx.redact)} is not a usable id (a string of 1 to ${MAX_ID_LENGTH} characters, without U+0000 or a lone surrogate)`;
  if (orderIndex === undefined) return `order_index: ${show(record.order_index, ctx.redact)} is not a non-negative int64`;
  // Nested `campaign.id` (the interface), else flat `campaign_id` (the session reference's sample).
  const campaign = record.campaign as { id?: unknown } | null | undefined;
  const nested = campaign !== null && typeof campaign === 'object';
  const campaignId = nested ? campaign.id : record.campaign_id;
  if (campaignId !== ctx.campaignId) {
    const field = nested || record.campaign_id === undefined ? 'campaign.id' : 'campaign_id';
    if (typeof campaignId !== 'string' || campaignId.length === 0) {
      return `${field}: ${show(campaignId, ctx.redact)} is not a usable campaign id`;
    }
    // Quoted as JSON: the reason is stored as text, which can hold no raw U+0000.
    return `${field}: ${shorten(ctx.redact(JSON.stringify(campaignId)), 80)} is not the campaign asked for`;
  }
  const score = scoreFault(record);
  if (score !== undefined) return `${score}: ${show(record[score], ctx.redact)} is not a number`;
  return undefined;
}

/** Checks a page's records; throws a DataError naming the first record at fault and its field. */
export function checkPage(data: unknown[], ctx: PageContext): CheckedRecord[] {
  const sorted = sortPage(data, ctx);
  const fault = sorted.faults[0];
  if (fault !== undefined) throw new DataError(fault.reason);
  return sorted.records;
}
