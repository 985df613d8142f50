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
export const identityCampaignList = z.looseObject({ data: z.array(identityCampaign) });

/** The envelope of a results page; records are checked one by one (see sync/records.ts). */
export const identityPage = z.looseObject({
  data: z.array(z.unknown()),
  has_more: z.boolean(),
  last_record_index: z.unknown().optional(),
  last_record_id: z.unknown().optional(),
});
export type Page = z.infer<typeof identityPage>;

/** Reports a zod error as `path: message` lines joined by `; `. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
