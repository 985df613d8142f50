/**
 * The service's resources as spec/service-interface.md §2 describes them: strict zod schemas (every
 * field of the spec present with its type, nothing else) and the vocabularies it lists. The
 * simulator's tests hold its output to them, so they are what "faithful" means. The client enforces
 * far less (api/envelopes.ts): only what the sync depends on.
 */
import { z } from 'zod';

const uuid = z.uuid();
/** ISO 8601 date-time; the spec notes some timestamps carry no timezone suffix. */
const dateTime = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/);
const dateTimeTz = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
const int64 = z.union([z.number().int(), z.bigint()]);

import { CAMPAIGN_TYPES } from './paths.js';

export { CAMPAIGN_TYPES };
export const SCENARIO_TYPE_KEYS = ['EMAIL', 'CHAT', 'THREADED_EMAIL', 'VOICE_CHAT'] as const;
export const SKILL_KEYS = [
  'RESOURCEFULNESS',
  'CLIENT_EMPATHY',
  'JUDGMENT',
  'ATTENTION_TO_DETAIL',
  'PRIORITIZATION',
  'WRITTEN_COMMUNICATION',
  'CRITICAL_THINKING',
  'COMMUNICATION',
  'SAFETY_AWARENESS',
] as const;
export const CEFR_LEVELS = ['A1', 'A2', 'B1', 'B2', 'C1', 'C2'] as const;
export const RECOMMENDATION_STATUSES = ['NOT_RECOMMENDED', 'RECOMMENDED', 'STRONGLY_RECOMMENDED'] as const;

export const specCampaign = z.strictObject({
  id: uuid,
  name: z.string(),
  display_name: z.string(),
  type: z.enum(CAMPAIGN_TYPES),
  created_at: dateTimeTz,
});
const campaignRef = z.strictObject({ id: uuid, name: z.string() });
const userRef = z.strictObject({ id: uuid, email: z.email() });
const scenario = z.strictObject({
  id: uuid,
  name: z.string(),
  type: z.strictObject({ key: z.string(), label: z.string() }),
});
/** §2.8: absent, null, {} or { cefr: { score } }. */
const additionalScores = z.strictObject({ cefr: z.strictObject({ score: z.enum(CEFR_LEVELS) }).optional() }).nullable();
const evalResult = z.strictObject({
  score: z.string().regex(/^-?\d+(\.\d+)?$/),
  skill: z.strictObject({ key: z.string(), label: z.string() }),
  rationale: z.string(),
  evaluated_at: dateTime,
  evaluation_id: uuid,
});
const described = z.strictObject({ description: z.string() });
const feedback = z
  .strictObject({
    strengths: z.array(described),
    growths: z.array(described),
    improvement_criteria: z.array(z.strictObject({ skill: z.string(), title: z.string(), description: z.string() })),
    cross_attempts_feedback: described.nullable(),
  })
  .nullable();

export const specSessionResult = z.strictObject({
  id: uuid,
  score: z.number(),
  campaign: campaignRef,
  user: userRef,
  session: z.strictObject({ id: uuid }),
  scenario,
  eval_results: z.array(evalResult),
  feedback,
  additional_scores: additionalScores.optional(),
  created_at: dateTime,
  updated_at: dateTime,
  order_index: int64,
});

const specRoleOverallShape = {
  id: uuid,
  recommendation_status: z.string(),
  campaign: campaignRef,
  user: userRef,
  overall_score: z.number().min(0).max(5),
  additional_scores: additionalScores.optional(),
  created_at: dateTime,
  updated_at: dateTime,
  order_index: int64,
};
export const specRoleOverall = z.strictObject(specRoleOverallShape);
export const specScoreDetail = z.strictObject({
  id: uuid,
  user: userRef,
  scenario,
  session: z.strictObject({ id: uuid }),
  score: z.number(),
  eval_results: z.array(evalResult),
  feedback,
  created_at: dateTime,
  updated_at: dateTime,
});
export const specRoleDetailed = z.strictObject({ ...specRoleOverallShape, score_details: z.array(specScoreDetail) });

export const specCampaignList = z.strictObject({ data: z.array(specCampaign) });
/** §2.12 page envelope, with the record schema of the endpoint. */
export function specPage<T extends z.ZodType>(record: T) {
  return z.strictObject({ data: z.array(record), has_more: z.boolean(), last_record_index: int64.nullable() });
}
export const specError = z.strictObject({
  error: z.strictObject({ message: z.string().min(1), status_code: z.number().int(), request_id: uuid }),
});
