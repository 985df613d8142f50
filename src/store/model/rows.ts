/**
 * Record -> row, as pure data: each table's columns in order, and functions that map
 * a record to the values of those columns. No SQL and no database here, so every store (SQLite
 * today, PostgreSQL next) builds its statements from the same column lists and writes the same rows.
 */
import { toJson } from '../../core/json.js';
import type { CheckedRecord } from '../../core/types.js';

type Obj = Record<string, unknown>;

/** The columns written by the sync, after the key (`id`), in order; eval results have no key. */
export const COLUMNS = {
  session_results: [
    'campaign_id',
    'user_id',
    'user_email',
    'session_id',
    'scenario_id',
    'scenario_name',
    'scenario_type',
    'score',
    'cefr',
    'feedback',
    'additional_scores',
    'created_at',
    'updated_at',
    'order_index',
    'raw',
  ],
  role_results: [
    'campaign_id',
    'user_id',
    'user_email',
    'recommendation_status',
    'overall_score',
    'cefr',
    'additional_scores',
    'report_type',
    'created_at',
    'updated_at',
    'order_index',
    'raw',
  ],
  score_details: [
    'role_result_id',
    'campaign_id',
    'user_id',
    'user_email',
    'scenario_id',
    'scenario_name',
    'scenario_type',
    'session_id',
    'score',
    'feedback',
    'created_at',
    'updated_at',
    'raw',
    'position',
  ],
  eval_results: [
    'parent_type',
    'parent_id',
    'evaluation_id',
    'skill_key',
    'skill_label',
    'score',
    'score_text',
    'rationale',
    'evaluated_at',
    'campaign_id',
    'position',
  ],
  campaigns: ['name', 'display_name', 'type', 'created_at', 'raw', 'seen_at'],
} as const;

export type Table = keyof typeof COLUMNS;
/**
 * A row's values in the order of its table's COLUMNS, then its key (`id`) for the keyed tables: the
 * order the statements of store/sqlite/sql.ts bind, built in one array literal (no push, no copy per row).
 */
export type Values = unknown[];

/** A text column: strings as they are, other scalars as text, objects as JSON. */
export function text(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return toJson(v);
  return String(v);
}

/** A REAL column: numbers, and numeric strings (eval scores arrive as strings). */
function real(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** A JSON text column: absent and null become NULL. */
function json(v: unknown): string | null {
  return v === undefined || v === null ? null : toJson(v);
}

/** Shared by every missing object: no allocation per record for a field that is not there. */
const NONE: Obj = Object.freeze({});

function obj(v: unknown): Obj {
  return v !== null && typeof v === 'object' ? (v as Obj) : NONE;
}

/** A scenario type's key: `{key, label}` as the spec shows it (a bare string is taken as the key). */
function typeKey(v: unknown): string | null {
  return typeof v === 'string' ? v : text(obj(v).key);
}

function cefrOf(additional: unknown): string | null {
  return text(obj(obj(additional).cefr).score);
}

/**
 * session_results values of a session record, then its id. Two shapes fill the same columns: the
 * interface's nested `user`, `session`, `scenario` and `score`, and the session reference's flat
 * `user_id`, `email`, `session_id`, `scenario_name`, `scenario_type` and `scenario_score`; the nested
 * value wins where a record carries both.
 */
export function sessionRow(r: CheckedRecord, campaignId: string): Values {
  const x = r.record;
  const user = obj(x.user);
  const scenario = obj(x.scenario);
  return [
    campaignId,
    text(user.id ?? x.user_id),
    text(user.email ?? x.email),
    text(obj(x.session).id ?? x.session_id),
    text(scenario.id ?? x.scenario_id),
    text(scenario.name ?? x.scenario_name),
    typeKey(scenario.type ?? x.scenario_type),
    real(x.score ?? x.scenario_score),
    cefrOf(x.additional_scores),
    json(x.feedback),
    json(x.additional_scores),
    text(x.created_at),
    text(x.updated_at),
    r.orderIndex,
    r.raw,
    r.id,
  ];
}

/**
 * role_results values of a role record (OVERALL or DETAILED), then its id; a flat `user_id`/`email` is
 * read too. `raw` is the record's text, or a DETAILED record's text without its score details
 * (store/model/compact.ts).
 */
export function roleRow(r: CheckedRecord, campaignId: string, reportType: string, raw: string = r.raw): Values {
  const x = r.record;
  const user = obj(x.user);
  return [
    campaignId,
    text(user.id ?? x.user_id),
    text(user.email ?? x.email),
    text(x.recommendation_status),
    real(x.overall_score),
    cefrOf(x.additional_scores),
    json(x.additional_scores),
    reportType,
    text(x.created_at),
    text(x.updated_at),
    r.orderIndex,
    raw,
    r.id,
  ];
}

/** score_details values of one entry of a DETAILED record's `score_details`, then its id (the caller checked it has one). */
export function detailValues(resultId: string, campaignId: string, detail: Obj, raw: string, position: number): Values {
  const du = obj(detail.user);
  const scenario = obj(detail.scenario);
  const id = text(detail.id);
  return [
    resultId,
    campaignId,
    text(du.id),
    text(du.email),
    text(scenario.id),
    text(scenario.name),
    text(obj(scenario.type).key),
    text(obj(detail.session).id),
    real(detail.score),
    json(detail.feedback),
    text(detail.created_at),
    text(detail.updated_at),
    raw,
    position,
    id,
  ];
}

/** eval_results values of a parent's `eval_results` array (none when it is not an array). */
export function evalRows(parentType: 'session_result' | 'score_detail', parentId: string, evals: unknown, campaignId: string): Values[] {
  if (!Array.isArray(evals)) return [];
  return evals.map((e, position) => {
    const ev = obj(e);
    const skill = obj(ev.skill);
    return [
      parentType,
      parentId,
      text(ev.evaluation_id),
      text(skill.key),
      text(skill.label),
      real(ev.score),
      text(ev.score),
      text(ev.rationale),
      text(ev.evaluated_at),
      campaignId,
      position,
    ];
  });
}

/** campaigns values of a campaign from the list, then its id. */
export function campaignRow(c: Obj, seenAt: string): Values {
  return [text(c.name), text(c.display_name), text(c.type), text(c.created_at), toJson(c), seenAt, text(c.id)];
}
