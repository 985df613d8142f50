/**
 * The paging decision (sync/paginate.ts), table-tested on its own: for each envelope and page, the
 * next cursor or the end, or the error that stops an endless loop.
 */
import { describe, expect, it } from 'vitest';
import { redactor } from '../../../src/core/redact.js';
import { DataError } from '../../../src/errors.js';
import { nextStep, type PageEnvelope, type PageFacts } from '../../../src/sync/paginate.js';

const where = 'page 2, GET /v1/campaigns/session/results (campaign c)';
const facts = (over: Partial<PageFacts>): PageFacts => ({
  where,
  sent: 100n,
  records: 3,
  last: 130n,
  redact: redactor('test-key-never-echoed'),
  ...over,
});

/** A bare-array page, as the client normalises it. */
const bare: PageEnvelope = { has_more: undefined };

interface Row {
  name: string;
  page: PageEnvelope;
  facts: Partial<PageFacts>;
  want: { done: true } | { next: bigint } | { error: RegExp };
}

const table: Row[] = [
  { name: 'last page', page: { has_more: false, last_record_index: 130 }, facts: {}, want: { done: true } },
  { name: 'last page, empty, no cursor field', page: { has_more: false }, facts: { records: 0, last: undefined }, want: { done: true } },
  { name: 'more: last_record_index', page: { has_more: true, last_record_index: 130 }, facts: {}, want: { next: 130n } },
  { name: 'more: last_record_id (one guide names it)', page: { has_more: true, last_record_id: 130 }, facts: {}, want: { next: 130n } },
  {
    name: 'more: index wins over id',
    page: { has_more: true, last_record_index: 130, last_record_id: 1 },
    facts: {},
    want: { next: 130n },
  },
  { name: 'more: null cursor fields, last record', page: { has_more: true, last_record_index: null }, facts: {}, want: { next: 130n } },
  { name: 'more: no cursor field, last record', page: { has_more: true }, facts: {}, want: { next: 130n } },
  { name: 'more: cursor as a decimal string', page: { has_more: true, last_record_index: '130' }, facts: {}, want: { next: 130n } },
  {
    name: 'more: int64 past 2^53 exact',
    page: { has_more: true, last_record_index: 9007199254740993n },
    facts: { sent: 9007199254740990n, last: 9007199254740993n },
    want: { next: 9007199254740993n },
  },
  {
    name: 'first page: nothing sent',
    page: { has_more: true, last_record_index: 5 },
    facts: { sent: undefined, last: 5n },
    want: { next: 5n },
  },
  { name: 'cursor beyond the last record is taken', page: { has_more: true, last_record_index: 140 }, facts: {}, want: { next: 140n } },
  {
    name: 'has_more with an empty page',
    page: { has_more: true },
    facts: { records: 0, last: undefined },
    want: { error: /has_more is true but the page is empty/ },
  },
  {
    name: 'cursor does not advance',
    page: { has_more: true, last_record_index: 100 },
    facts: {},
    want: { error: /the cursor did not advance \(sent 100, page ends at 130, next 100\)/ },
  },
  { name: 'cursor goes back', page: { has_more: true, last_record_index: 50 }, facts: {}, want: { error: /did not advance/ } },
  {
    name: 'cursor behind the last record',
    page: { has_more: true, last_record_index: 120 },
    facts: {},
    want: { error: /did not advance \(sent 100, page ends at 130, next 120\)/ },
  },
  {
    name: 'negative cursor field',
    page: { has_more: true, last_record_index: -1 },
    facts: {},
    want: { error: /last_record_index: -1 is not a non-negative int64/ },
  },
  {
    name: 'a bad cursor field fails even the last page',
    page: { has_more: false, last_record_id: 'x' },
    facts: {},
    want: { error: /last_record_id: "x" is not a non-negative int64/ },
  },
  { name: 'float cursor', page: { has_more: true, last_record_index: 1.5 }, facts: {}, want: { error: /is not a non-negative int64/ } },
  // A bare-array page (no envelope): the full-page rule.
  { name: 'bare array: a full page goes on after its last record', page: bare, facts: { records: 3, limit: 3 }, want: { next: 130n } },
  { name: 'bare array: a short page is the end', page: bare, facts: { records: 2, limit: 3 }, want: { done: true } },
  {
    name: 'bare array: an empty page after a full one is a clean end',
    page: bare,
    facts: { records: 0, last: undefined, limit: 3 },
    want: { done: true },
  },
  {
    name: 'bare array: an empty first page is the end',
    page: bare,
    facts: { sent: undefined, records: 0, last: undefined, limit: 3 },
    want: { done: true },
  },
  { name: 'bare array: a page longer than the limit counts as full', page: bare, facts: { records: 4, limit: 3 }, want: { next: 130n } },
  {
    name: 'bare array: int64 past 2^53 exact',
    page: bare,
    facts: { sent: 9007199254740990n, last: 9007199254740993n, records: 3, limit: 3 },
    want: { next: 9007199254740993n },
  },
  {
    name: 'bare array: a full page that does not advance',
    page: bare,
    facts: { last: 100n, limit: 3 },
    want: { error: /did not advance/ },
  },
  { name: 'bare array: no limit known', page: bare, facts: { limit: undefined }, want: { error: /without the limit/ } },
];

describe('nextStep: next cursor or stop', () => {
  for (const row of table) {
    it(row.name, () => {
      const run = () => nextStep(row.page, facts(row.facts));
      if ('error' in row.want) {
        expect(run).toThrow(DataError);
        expect(run).toThrow(row.want.error);
        expect(run).toThrow(where);
      } else if ('done' in row.want) {
        expect(run()).toEqual({ done: true });
      } else {
        expect(run()).toEqual({ done: false, next: row.want.next });
      }
    });
  }
});
