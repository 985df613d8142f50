/**
 * The simulator's query parsing: the parameters of the results endpoints (spec §4.2, §4.3) and the
 * campaign list's paging parameters (the `campaigns-paged` quirk), with the 400s the README lists.
 */
import { randomUUID } from 'node:crypto';
import { calendarDateProblem } from '../core/date.js';

const INT64 = /^-?\d{1,19}$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** An answer with an error status and the spec's error body (§7). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The spec's error body (§7). */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({ error: { message, status_code: status, request_id: randomUUID() } });
}

/** A parameter given at most once. */
function once(url: URL, name: string): string | undefined {
  const all = url.searchParams.getAll(name);
  if (all.length > 1) throw new HttpError(400, `${name} must be given once`);
  return all[0];
}

function parseLimit(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 100) throw new HttpError(400, 'limit must be an integer from 1 to 100');
  return Number(text);
}

/** The paging parameters of a paged campaign list: `limit` (default `pageSize`) and `starting_after` (a campaign id). */
export function parseCampaignQuery(url: URL, pageSize: number): { limit: number; startingAfter: string | undefined } {
  return { limit: parseLimit(once(url, 'limit'), pageSize), startingAfter: once(url, 'starting_after') };
}

/** The parameters of a results endpoint. */
export function parseQuery(url: URL, allowed: { reportType: boolean }) {
  const one = (name: string) => once(url, name);
  const limit = parseLimit(one('limit'), 10);
  const sort = one('sort') ?? 'desc';
  if (sort !== 'asc' && sort !== 'desc') throw new HttpError(400, 'sort must be asc or desc');
  const startDate = one('start_date');
  const endDate = one('end_date');
  for (const [name, v] of [
    ['start_date', startDate],
    ['end_date', endDate],
  ] as const) {
    const problem = v === undefined ? undefined : calendarDateProblem(v);
    if (problem !== undefined) throw new HttpError(400, `${name}: ${problem}`);
  }
  const afterText = one('starting_after');
  let startingAfter: bigint | undefined;
  if (afterText !== undefined) {
    const v = INT64.test(afterText) ? BigInt(afterText) : undefined;
    if (v === undefined || v < INT64_MIN || v > INT64_MAX) throw new HttpError(400, 'starting_after must be an int64 order_index');
    startingAfter = v;
  }
  let reportType: 'DETAILED' | 'OVERALL' = 'OVERALL';
  if (allowed.reportType) {
    const r = one('report_type') ?? 'OVERALL';
    if (r !== 'DETAILED' && r !== 'OVERALL') throw new HttpError(400, 'report_type must be DETAILED or OVERALL');
    reportType = r;
  }
  const campaignId = one('campaign_id');
  if (campaignId === undefined || campaignId === '') throw new HttpError(400, 'campaign_id is required');
  return { limit, sort, startDate, endDate, startingAfter, reportType, campaignId };
}
