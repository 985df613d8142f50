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

/** An ISO time (`…T09:15:04.120Z`) as the same instant with microseconds at +02:00 (`…T11:15:04.120457+02:00`). */
function withOffset(iso: string): string {
  const local = new Date(Date.parse(iso) + 2 * 3_600_000).toISOString();
  return `${local.slice(0, 23)}457+02:00`;
}

/**
 * The `value-forms` quirk: each record in one of four forms, by the last digit of its id. 0: its
 * times with microseconds and an offset; 1: its times without a zone (UTC); 2: `additional_scores`
 * an explicit JSON null, an empty scenario name (session) or recommendation (role); 3: as it is.
 */
function valueForms(r: Obj, endpoint: 'session' | 'role'): void {
  const form = Number.parseInt(String(r.id).slice(-1), 16) % 4;
  for (const key of ['created_at', 'updated_at']) {
    const t = r[key];
    if (typeof t !== 'string') continue;
    if (form === 0) r[key] = withOffset(t);
    else if (form === 1) r[key] = t.replace(/Z$/, '');
  }
  if (form !== 2) return;
  r.additional_scores = null;
  if (endpoint === 'role') r.recommendation_status = '';
  else if (r.scenario !== null && typeof r.scenario === 'object') r.scenario = { ...(r.scenario as Obj), name: '' };
}

/** A record as the simulator serves it under `quirks` (the record is changed in place, or replaced); `since`: when the server started. */
export function shapeRecord(r: Obj, endpoint: 'session' | 'role', quirks: Quirks, since = 0): Obj {
  let out = r;
  if (quirks.drift) drifted(out, endpoint, since);
  if (quirks.docsFeedback) {
    if (endpoint === 'session') out.feedback = docsFeedback(out.feedback);
    else if (Array.isArray(out.score_details)) for (const d of out.score_details as Obj[]) d.feedback = docsFeedback(d.feedback);
  }
  if (quirks.valueForms) valueForms(out, endpoint);
  if (quirks.flatSession && endpoint === 'session') out = flatSession(out);
  if (quirks.stringOrderIndex) out.order_index = String(out.order_index);
  return out;
}
