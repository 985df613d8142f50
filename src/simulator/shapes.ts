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

/**
 * The forms of a time the `value-forms` quirk serves, each a zone (empty: none, as score details carry),
 * a count of fractional digits (the milliseconds served, then `457123789`: past the millisecond the
 * instant gains a little) and the separator between the date and the time.
 */
const TIME_FORMS: ReadonlyArray<{ zone: string; digits: number; sep?: string }> = [
  { zone: 'Z', digits: 3 },
  { zone: '+02:00', digits: 6 },
  { zone: '', digits: 3 },
  { zone: '-05:30', digits: 9 },
  { zone: 'Z', digits: 0 },
  { zone: '+02:00', digits: 1 },
  { zone: 'Z', digits: 7 },
  { zone: '', digits: 4, sep: ' ' },
  { zone: '-05:30', digits: 2 },
  { zone: 'Z', digits: 5 },
  { zone: '', digits: 8 },
  { zone: '+0200', digits: 6 },
];

/** The minutes a zone of TIME_FORMS is ahead of UTC. */
function offsetMinutes(zone: string): number {
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
  return m === null ? 0 : (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

/** An ISO time (`…T09:15:04.120Z`) in form `k` of TIME_FORMS (`…T11:15:04.120457+02:00`); anything else as it is. */
function timeForm(t: unknown, k: number): unknown {
  const form = TIME_FORMS[k % TIME_FORMS.length] as (typeof TIME_FORMS)[number];
  const ms = typeof t === 'string' ? Date.parse(t.endsWith('Z') ? t : `${t}Z`) : Number.NaN;
  if (Number.isNaN(ms)) return t;
  const local = new Date(ms + offsetMinutes(form.zone) * 60_000).toISOString();
  const fraction = `${local.slice(20, 23)}457123789`.slice(0, form.digits);
  return `${local.slice(0, 10)}${form.sep ?? 'T'}${local.slice(11, 19)}${form.digits > 0 ? `.${fraction}` : ''}${form.zone}`;
}

/** Which form of TIME_FORMS an id's times take: by its last but one character (a hex digit). */
function formOf(id: unknown): number {
  const n = Number.parseInt(String(id).slice(-2, -1), 16);
  return Number.isNaN(n) ? 0 : n;
}

/** The times of a record's eval results (`evaluated_at`), each in its evaluation's form. */
function evalTimes(evals: unknown): void {
  if (!Array.isArray(evals)) return;
  for (const e of evals as Obj[]) {
    if (e !== null && typeof e === 'object' && 'evaluated_at' in e) e.evaluated_at = timeForm(e.evaluated_at, formOf(e.evaluation_id));
  }
}

/**
 * The `value-forms` quirk. Times: a record's `created_at` and `updated_at`, its score details' and its
 * eval results' times, each in one of TIME_FORMS (by the last but one character of its id): offsets,
 * `Z`, no zone, 0 to 9 fractional digits. Other values, by the last digit of the record's id: when
 * it is 2, 6, a or e, `additional_scores` an explicit JSON null, an empty scenario name (session) or
 * recommendation (role); else as they are.
 */
function valueForms(r: Obj, endpoint: 'session' | 'role'): void {
  const k = formOf(r.id);
  for (const key of ['created_at', 'updated_at']) if (typeof r[key] === 'string') r[key] = timeForm(r[key], k);
  evalTimes(r.eval_results);
  if (Array.isArray(r.score_details)) {
    for (const d of r.score_details as Obj[]) {
      if (d === null || typeof d !== 'object') continue;
      for (const key of ['created_at', 'updated_at']) if (typeof d[key] === 'string') d[key] = timeForm(d[key], formOf(d.id));
      evalTimes(d.eval_results);
    }
  }
  if (Number.parseInt(String(r.id).slice(-1), 16) % 4 !== 2) return;
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
