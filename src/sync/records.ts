/**
 * The identity rules of a record, checked on every record of a page before anything of the
 * page is written: a usable `id`, an int64 `order_index` past the cursor and rising, and the
 * stream's campaign id (`campaign.id`, or a flat record's `campaign_id`). Everything else is lenient and kept as sent.
 *
 * Hand-written rather than zod: this runs on every record and must not walk or copy large objects.
 */
import { toInt64 } from '../core/int64.js';
import { NumberText, toJson } from '../core/json.js';
import { type Redact, shorten } from '../core/redact.js';
import type { CheckedRecord } from '../core/types.js';
import { DataError } from '../errors.js';

/**
 * Longest id accepted. The spec's ids are UUIDs (36 characters); anything past a few hundred is not an
 * id but a bug or an attack, and it would be stored, indexed and printed in every error about it.
 */
const MAX_ID_LENGTH = 200;

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
  /** Names the request, e.g. `GET /v1/campaigns/role/results (campaign …), page 3`. */
  where: string;
  campaignId: string;
  /** The cursor sent with the request: every record must come after it. */
  after: bigint | undefined;
  /** Takes the key out of the values an error quotes (core/redact.ts). */
  redact: Redact;
}

/** Checks a page's records; throws a DataError naming the record's position and field. */
export function checkPage(data: unknown[], ctx: PageContext): CheckedRecord[] {
  const out: CheckedRecord[] = new Array(data.length);
  let previous = ctx.after;
  for (let i = 0; i < data.length; i++) {
    const record = data[i] as Record<string, unknown>;
    const at = `${ctx.where}: record ${i + 1} of ${data.length}`;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      throw new DataError(`${at}: not an object`);
    }
    const id = record.id;
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH)
      throw new DataError(`${at}: id: ${show(id, ctx.redact)} is not a usable id`);
    const orderIndex = toInt64(record.order_index);
    if (orderIndex === undefined) {
      throw new DataError(`${at} (id ${id}): order_index: ${show(record.order_index, ctx.redact)} is not a non-negative int64`);
    }
    // Nested `campaign.id` (the interface), else flat `campaign_id` (the session reference's sample).
    const campaign = record.campaign as { id?: unknown } | null | undefined;
    const nested = campaign !== null && typeof campaign === 'object';
    const campaignId = nested ? campaign.id : record.campaign_id;
    if (campaignId !== ctx.campaignId) {
      const field = nested || record.campaign_id === undefined ? 'campaign.id' : 'campaign_id';
      if (typeof campaignId !== 'string' || campaignId.length === 0) {
        throw new DataError(`${at} (id ${id}): ${field}: ${show(campaignId, ctx.redact)} is not a usable campaign id`);
      }
      throw new DataError(`${at} (id ${id}): ${field}: ${campaignId} is not the campaign asked for`);
    }
    if (previous !== undefined && orderIndex <= previous) {
      throw new DataError(
        `${at} (id ${id}): order_index: ${orderIndex} does not come after ${previous} (records must arrive in ascending order_index past the cursor)`,
      );
    }
    previous = orderIndex;
    out[i] = new Checked(record, id, orderIndex);
  }
  return out;
}
