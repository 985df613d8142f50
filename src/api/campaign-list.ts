/**
 * The campaign list's shapes and its paging rule, as pure functions (the client only loops).
 *
 * The interface shows `{ data }` and no paging; the provider's guides say list endpoints "such as
 * listing campaigns" page like results. So a list that answers `has_more: true` is followed with
 * `starting_after` = the envelope's `last_record_id` (or `last_record_index`), else the last
 * campaign's `id`: a string cursor, since campaigns are paged by id, not by an `order_index`. Ids
 * are not ordered, so "the cursor advances" means "it was never sent before"; a page cap ends any
 * other loop. A bare JSON array is the whole list (it carries no paging signal, and no `limit` is
 * sent to judge a full page by).
 */
import { type Redact, redactJson } from '../core/redact.js';
import { ApiError, type RequestInfo } from '../errors.js';
import { type Campaign, formatIssues, identitySchemas, isCampaign, isObject } from './envelopes.js';

/** At most this many list pages are followed (10,000 campaigns at the service's default page of 10). */
export const MAX_CAMPAIGN_PAGES = 1000;

/** The list's envelope as `identitySchemas().campaignList` accepts it (api/envelopes.ts). */
function isCampaignList(value: unknown): value is { data: Campaign[]; has_more?: boolean | null; [key: string]: unknown } {
  if (!isObject(value) || !Array.isArray(value.data) || !value.data.every(isCampaign)) return false;
  return value.has_more === undefined || value.has_more === null || typeof value.has_more === 'boolean';
}

/** One page of the campaign list, as the paging rule needs it. */
export interface CampaignPage {
  campaigns: Campaign[];
  hasMore: boolean;
  /** The envelope's cursor field, if it names one. */
  cursorField?: { name: string; value: unknown } | undefined;
}

/** Parses a campaign list body: `{ data, has_more?, last_record_id? | last_record_index? }` or a bare array. */
export function parseCampaignPage(value: unknown, info: RequestInfo): CampaignPage {
  if (Array.isArray(value)) {
    if (value.every(isCampaign)) return { campaigns: value, hasMore: false };
    const parsed = identitySchemas().campaignArray.safeParse(value);
    if (!parsed.success) throw new ApiError(info, `unexpected response: ${formatIssues(parsed.error)}`, { invalid: true });
    return { campaigns: parsed.data, hasMore: false };
  }
  let page: { data: Campaign[]; has_more?: boolean | null | undefined; [key: string]: unknown };
  if (isCampaignList(value)) page = value;
  else {
    const parsed = identitySchemas().campaignList.safeParse(value);
    if (!parsed.success) throw new ApiError(info, `unexpected response: ${formatIssues(parsed.error)}`, { invalid: true });
    page = parsed.data;
  }
  let cursorField: CampaignPage['cursorField'];
  for (const name of ['last_record_id', 'last_record_index'] as const) {
    const v = page[name];
    if (v !== undefined && v !== null) {
      cursorField = { name, value: v };
      break;
    }
  }
  return { campaigns: page.data, hasMore: page.has_more === true, cursorField };
}

export type CampaignStep = { done: true } | { done: false; next: string };

/** What follows a campaign list page; an ApiError (invalid answer) where following it could loop. */
export function nextCampaignStep(page: CampaignPage, facts: { info: RequestInfo; page: number; sent: ReadonlySet<string> }): CampaignStep {
  const { info } = facts;
  if (!page.hasMore) return { done: true };
  const where = `page ${facts.page}`;
  if (page.campaigns.length === 0)
    throw new ApiError(info, `${where}: has_more is true but the page is empty; stopped to avoid an endless loop`, { invalid: true });
  let next: string | undefined;
  if (page.cursorField) {
    const { name, value } = page.cursorField;
    next = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? String(value) : undefined;
    if (next === undefined || next === '' || next.length > 200)
      throw new ApiError(info, `${where}: ${name} is not a usable cursor`, { invalid: true });
  } else next = page.campaigns.at(-1)?.id;
  if (next === undefined || facts.sent.has(next)) {
    throw new ApiError(
      info,
      `${where}: the cursor did not advance (next ${next ?? 'none'} was already sent); stopped to avoid an endless loop`,
      {
        invalid: true,
      },
    );
  }
  if (facts.page >= MAX_CAMPAIGN_PAGES)
    throw new ApiError(info, `${where}: more than ${MAX_CAMPAIGN_PAGES} pages of campaigns; stopped to avoid an endless loop`, {
      invalid: true,
    });
  return { done: false, next };
}

/**
 * A listed campaign as it may be stored and shown: its text (name, type, every other value) without
 * the key, since a mirror's campaigns reach `status`, warnings and /healthz. Its id cannot be changed
 * (it is what the results are asked by): a campaign whose id carries a run of the key is left out,
 * `undefined`.
 */
export function redactCampaign(campaign: Campaign, redact: Redact): Campaign | undefined {
  if (redact(campaign.id) !== campaign.id) return undefined;
  const out = redactJson(campaign, redact) as Campaign;
  out.id = campaign.id;
  return out;
}
