/**
 * A page's records that failed the record rules (sync/records.ts), made ready for the quarantine
 * (store/sqlite/quarantine.ts): each with its text exactly as the service sent it, cut from the body's
 * bytes (core/json-bytes.ts findRecordCuts), and the page that held it, so that it can be read again.
 */

import { toJson } from '../core/json.js';
import { findRecordCuts } from '../core/json-bytes.js';
import type { Redact } from '../core/redact.js';
import type { QuarantinedRecord } from '../core/types.js';
import type { RecordFault } from './records.js';

/** The bytes JSON allows between tokens. */
const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * Each record's text in a page's body, as received (the white space around it left out), or
 * undefined when the body cannot be cut into exactly `count` records.
 */
export function recordTexts(body: Buffer, count: number): string[] | undefined {
  const found = findRecordCuts(body);
  if (found === undefined) return undefined;
  const { cuts } = found;
  const texts: string[] = [];
  for (let k = 0; k + 1 < cuts.length; k += 2) {
    let start = cuts[k] as number;
    let end = cuts[k + 1] as number;
    while (start < end && isSpace(body[start])) start++;
    while (end > start && isSpace(body[end - 1])) end--;
    // An empty array has one empty cut: no record.
    if (start === end && cuts.length === 2) break;
    texts.push(body.toString('utf8', start, end));
  }
  return texts.length === count ? texts : undefined;
}

/**
 * The text kept: as received, unless the record holds the API key. A key written with JSON escapes
 * (`\u0073k_…`) would pass a redaction of the text, so the parsed value is looked at: a record that
 * holds the key is kept as its value written anew, the key taken out.
 */
function rawText(received: string | undefined, value: unknown, redact: Redact): string {
  const written = toJson(value);
  const redacted = redact(written);
  if (received === undefined || redacted !== written) return redacted;
  return redact(received);
}

/** Where a page was read from: what a retry sends to read it again. */
export interface PageOrigin {
  after: bigint | undefined;
  since: string | undefined;
  until: string | undefined;
  requestId: string | undefined;
  redact: Redact;
}

/**
 * The faulty records of a page, as the quarantine keeps them. Their text is the body's bytes; a body
 * that cannot be cut (a shape core/json-bytes.ts does not read) gives the record's JSON text instead,
 * the same value written anew. The API key, were a record to hold it, is taken out (rawText).
 */
export function quarantined(faults: readonly RecordFault[], data: unknown[], body: Buffer, origin: PageOrigin): QuarantinedRecord[] {
  const texts = recordTexts(body, data.length);
  const at = new Date().toISOString();
  return faults.map((f) => ({
    raw: rawText(texts?.[f.index], data[f.index], origin.redact),
    reason: f.reason,
    recordId: f.id,
    orderIndex: f.orderIndex,
    after: origin.after,
    since: origin.since,
    until: origin.until,
    position: f.index + 1,
    requestId: origin.requestId,
    at,
  }));
}
