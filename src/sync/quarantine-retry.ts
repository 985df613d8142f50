/**
 * `quarantine retry`: reads again the page that held each quarantined record, from the same
 * `starting_after` and date window with a `limit` reaching the record, and stores those that now
 * pass the record rules, releasing them from the quarantine in the same transaction. One request per
 * page (records of one page share it), through the client's budget like any other. A record is
 * found again by its id when it had a usable one (records before it may have been deleted since),
 * else by its position in the page.
 */
import type { ApiClient } from '../api/client.js';
import { type CheckedRecord, streamId } from '../core/types.js';
import { ApiError, AuthError, DataError, describeRequest } from '../errors.js';
import { resultsPath } from '../spec/paths.js';
import { mayHoldUnstorable } from '../store/model/storable.js';
import type { PageSink } from '../store/port.js';
import type { QuarantineRow } from '../store/sqlite/quarantine.js';
import { sortPage } from './records.js';

/** What became of each record retried. */
export interface RetryOutcome {
  /** Stored in the mirror and released from the quarantine. */
  stored: QuarantineRow[];
  /** Still quarantined, with why: it still fails the rules, it is not served any more, or its page failed. */
  kept: Array<{ row: QuarantineRow; why: string }>;
  requests: number;
}

export interface RetryDeps {
  client: ApiClient;
  sink: PageSink;
  signal?: AbortSignal | undefined;
}

/** The page a record was read from: rows of one page are retried with one request. */
function pageKey(r: QuarantineRow): string {
  return JSON.stringify([r.stream, r.page_after, r.page_since, r.page_until]);
}

export async function retryQuarantined(rows: readonly QuarantineRow[], deps: RetryDeps): Promise<RetryOutcome> {
  const out: RetryOutcome = { stored: [], kept: [], requests: 0 };
  const pages = new Map<string, QuarantineRow[]>();
  for (const r of rows) pages.set(pageKey(r), [...(pages.get(pageKey(r)) ?? []), r]);
  const opened = new Set<string>();
  for (const group of pages.values()) {
    if (deps.signal?.aborted) break;
    const first = group[0] as QuarantineRow;
    const id = streamId(first.campaign_id, first.endpoint, first.report_type);
    if (!opened.has(id.key)) {
      // Under the stream's lock where the mirror has one (PostgreSQL): no worker writes it meanwhile.
      await deps.sink.openStream(id);
      opened.add(id.key);
    }
    const after = first.page_after === null ? undefined : BigInt(first.page_after);
    const limit = Math.min(100, Math.max(...group.map((r) => r.page_position)));
    const counter = { requests: 0, bytes: 0 };
    let data: unknown[];
    let records: CheckedRecord[];
    let requestId: string | undefined;
    const reasons = new Map<number, string>();
    try {
      const answer = await deps.client.resultsPage(
        {
          endpoint: id.endpoint,
          campaignId: id.campaignId,
          limit,
          reportType: id.endpoint === 'role' ? ((id.reportType ?? 'DETAILED') as 'DETAILED' | 'OVERALL') : undefined,
          startingAfter: after,
          startDate: first.page_since ?? undefined,
          endDate: first.page_until ?? undefined,
        },
        counter,
      );
      data = answer.page.data;
      requestId = answer.requestId;
      const where = `quarantine retry, ${describeRequest({ method: 'GET', path: resultsPath(id.endpoint), campaignId: id.campaignId })}`;
      const strings = mayHoldUnstorable(answer.body);
      const sorted = sortPage(data, { where, campaignId: id.campaignId, after, redact: deps.client.redact, strings });
      records = sorted.records;
      for (const f of sorted.faults) reasons.set(f.index, f.reason);
    } catch (err) {
      out.requests += counter.requests;
      // The service's answer (a 404, retries exhausted) or a page unsound as a whole: this page's
      // records stay. A 401, an abort or a storage failure stops the retry.
      if (err instanceof AuthError || !(err instanceof ApiError || err instanceof DataError)) throw err;
      for (const row of group) out.kept.push({ row, why: deps.client.redact(err.message) });
      continue;
    }
    out.requests += counter.requests;
    const good: CheckedRecord[] = [];
    const released: QuarantineRow[] = [];
    for (const row of group) {
      const index = placeOf(row, data);
      if (index < 0 || index >= data.length) {
        out.kept.push({ row, why: 'not served at its place any more (deleted by the service?): drop it if it is gone' });
        continue;
      }
      const reason = reasons.get(index);
      if (reason !== undefined) {
        out.kept.push({ row, why: `still fails: ${reason}` });
        continue;
      }
      const record = records.find((r) => r.record === data[index]);
      if (record === undefined) continue;
      good.push(record);
      released.push(row);
    }
    if (released.length === 0) continue;
    await deps.sink.commitPage(id, good, undefined, { quarantine: { add: [], release: released.map((r) => r.id) }, requestId });
    // Reported as stored once committed: a sink may resolve commitPage while the page is under way.
    await deps.sink.settle(id);
    out.stored.push(...released);
  }
  await deps.sink.flush();
  return out;
}

function field(value: unknown, name: 'id' | 'order_index'): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
}

/**
 * Where a quarantined record is in its page read again: by its id, else by its order_index, else by
 * its position (a record with neither; records deleted before it since would move it: then another
 * record is read in its place, stored if it passes, as any read of the stream would).
 */
function placeOf(row: QuarantineRow, data: unknown[]): number {
  if (row.record_id !== null) return data.findIndex((d) => field(d, 'id') === row.record_id);
  if (row.order_index !== null) return data.findIndex((d) => String(field(d, 'order_index')) === row.order_index);
  return row.page_position - 1;
}
