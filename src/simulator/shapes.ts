/**
 * The documented shapes of a record (quirks.ts), as pure transforms of the interface's records: the
 * same values in another shape, so a pull in any mode can be compared with a pull in the default one.
 */
import type { Quirks } from './quirks.js';

type Obj = Record<string, unknown>;

/** Feedback as the provider's guides show it: `{ key_strengths, areas_for_growths }`. */
export function docsFeedback(feedback: unknown): unknown {
  if (feedback === null || typeof feedback !== 'object') return feedback;
  const f = feedback as {
    strengths?: Array<{ description: string }>;
    improvement_criteria?: Array<{ title: string; description: string }>;
  };
  return {
    key_strengths: (f.strengths ?? []).map((s, k) => ({ title: `Strength ${k + 1}`, strength: s.description })),
    areas_for_growths: (f.improvement_criteria ?? []).map((c) => ({ title: c.title, improvement_area: c.description })),
  };
}

/**
 * A session record as the session results reference shows it: `campaign_id`, `user_id`, `email`,
 * `session_id`, `scenario_score`, `scenario_name` and `scenario_type` instead of the nested
 * `campaign`, `user`, `session`, `scenario` and `score` (the reference shows no scenario id).
 */
export function flatSession(r: Obj): Obj {
  const user = r.user as { id: string; email: string };
  const scenario = r.scenario as { name: string; type: unknown };
  const out: Obj = {
    id: r.id,
    campaign_id: (r.campaign as { id: string }).id,
    user_id: user.id,
    email: user.email,
    session_id: (r.session as { id: string }).id,
    scenario_score: r.score,
    scenario_name: scenario.name,
    scenario_type: scenario.type,
    eval_results: r.eval_results,
    feedback: r.feedback,
  };
  if ('additional_scores' in r) out.additional_scores = r.additional_scores;
  out.created_at = r.created_at;
  out.updated_at = r.updated_at;
  out.order_index = r.order_index;
  return out;
}

/** The `drift` quirk's changes to a record created at or after `since` (the server's start). */
function drifted(r: Obj, endpoint: 'session' | 'role', since: number): void {
  if (!(Date.parse(String(r.created_at)) >= since)) return;
  r.assessment_version = 2;
  if (endpoint === 'role') r.recommendation_status = 'ON_HOLD';
}

/** A record as the simulator serves it under `quirks` (the record is changed in place, or replaced); `since`: when the server started. */
export function shapeRecord(r: Obj, endpoint: 'session' | 'role', quirks: Quirks, since = 0): Obj {
  let out = r;
  if (quirks.drift) drifted(out, endpoint, since);
  if (quirks.docsFeedback) {
    if (endpoint === 'session') out.feedback = docsFeedback(out.feedback);
    else if (Array.isArray(out.score_details)) for (const d of out.score_details as Obj[]) d.feedback = docsFeedback(d.feedback);
  }
  if (quirks.flatSession && endpoint === 'session') out = flatSession(out);
  if (quirks.stringOrderIndex) out.order_index = String(out.order_index);
  return out;
}
