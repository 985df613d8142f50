/**
 * What the client enforces on the service's answers (PRODUCT.md §4): only the fields the sync
 * depends on (id, order_index, campaign id, the envelope). Everything else is stored as sent; the
 * strict schemas of the spec are in spec/schemas.ts.
 */
import { z } from 'zod';

/** A campaign as mirrored: id and type are needed for routing; the rest is kept as sent. */
export const identityCampaign = z.looseObject({
  id: z.string().min(1),
  name: z.string().nullish(),
  display_name: z.string().nullish(),
  type: z.string().nullish(),
  created_at: z.string().nullish(),
});
export type Campaign = z.infer<typeof identityCampaign>;
/** The envelope of a results page; records are checked one by one (see sync/records.ts). */
export const identityPage = z.looseObject({
  data: z.array(z.unknown()),
  has_more: z.boolean(),
  last_record_index: z.unknown().optional(),
  last_record_id: z.unknown().optional(),
});
/**
 * A results page as the sync sees it: the envelope, or a bare JSON array of records normalised to
 * `{ data, has_more: undefined }` (sync/paginate.ts pages those by the full-page rule).
 */
export interface Page {
  data: unknown[];
  has_more: boolean | undefined;
  last_record_index?: unknown;
  last_record_id?: unknown;
}

/** A results body as a Page: a bare array is the page's records with no envelope. */
export function toPage(value: unknown): z.ZodSafeParseResult<Page> {
  if (Array.isArray(value)) return { success: true, data: { data: value, has_more: undefined } };
  return identityPage.safeParse(value);
}

/** Reports a zod error as `path: message` lines joined by `; `. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
