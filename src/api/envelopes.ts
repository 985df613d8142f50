/**
 * What the client enforces on the service's answers: only the fields the sync
 * depends on (id, order_index, campaign id, the envelope). Everything else is stored as sent; the
 * strict schemas of the spec are in spec/schemas.ts.
 *
 * A well-formed answer is accepted by plain checks; only one that fails them is read again by the zod
 * schemas below, built on first use, for the message (`data.0.id: Invalid input: …`): a pull whose
 * answers are fine never loads zod. The checks accept exactly what the schemas accept
 * (test/unit/api/envelopes.test.ts holds them to it).
 */
import { createRequire } from 'node:module';
import type { z as Z } from 'zod';

/** A campaign as mirrored: id and type are needed for routing; the rest is kept as sent. */
export interface Campaign {
  id: string;
  name?: string | null | undefined;
  display_name?: string | null | undefined;
  type?: string | null | undefined;
  created_at?: string | null | undefined;
  [key: string]: unknown;
}

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

/** What zod's `z.object` takes: an object that is not an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const optionalText = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/** The identity check of one campaign (as `identitySchemas().campaign` accepts). */
export function isCampaign(value: unknown): value is Campaign {
  return (
    isObject(value) &&
    typeof value.id === 'string' &&
    value.id.length >= 1 &&
    optionalText(value.name) &&
    optionalText(value.display_name) &&
    optionalText(value.type) &&
    optionalText(value.created_at)
  );
}

type Schemas = ReturnType<typeof buildSchemas>;
let schemas: Schemas | undefined;

function buildSchemas() {
  const { z } = createRequire(import.meta.url)('zod') as { z: typeof Z };
  const campaign = z.looseObject({
    id: z.string().min(1),
    name: z.string().nullish(),
    display_name: z.string().nullish(),
    type: z.string().nullish(),
    created_at: z.string().nullish(),
  });
  return {
    campaign,
    /** The envelope of a results page; records are checked one by one (see sync/records.ts). */
    page: z.looseObject({
      data: z.array(z.unknown()),
      has_more: z.boolean(),
      last_record_index: z.unknown().optional(),
      last_record_id: z.unknown().optional(),
    }),
    campaignList: z.looseObject({
      data: z.array(campaign),
      has_more: z.boolean().nullish(),
      last_record_id: z.unknown().optional(),
      last_record_index: z.unknown().optional(),
    }),
    campaignArray: z.array(campaign),
  };
}

/** The zod schemas of the answers, for the message of one that failed the plain checks. */
export function identitySchemas(): Schemas {
  schemas ??= buildSchemas();
  return schemas;
}

/** A results body as a Page: a bare array is the page's records with no envelope. */
export function toPage(value: unknown): Z.ZodSafeParseResult<Page> {
  if (Array.isArray(value)) return { success: true, data: { data: value, has_more: undefined } };
  if (isObject(value) && Array.isArray(value.data) && typeof value.has_more === 'boolean')
    return { success: true, data: value as unknown as Page };
  return identitySchemas().page.safeParse(value);
}

/** Reports a zod error as `path: message` lines joined by `; `. */
export function formatIssues(error: Z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
