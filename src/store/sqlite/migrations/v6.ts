/**
 * Version 6: DETAILED records stored once. Score details and eval results gain their `position` in
 * the record, two views give the full rows back, and every DETAILED record already stored is
 * rewritten into the new shape from its own `raw` (the source of truth), in the migration's
 * transaction.
 *
 * The shape, as this version defines it: a record's `raw` keeps every field but `score_details`,
 * whose entries live in score_details (each `raw` without its `eval_results`, whose entries live in
 * eval_results). Only what can be rebuilt exactly is taken out:
 * - a record's `score_details` only when every entry is an object with an id not seen before in it;
 *   otherwise the record keeps its whole `raw` (its entries with an id are stored as before);
 * - an entry's `eval_results` only when every eval result has exactly the spec's fields in the spec's
 *   order (`score`, `skill` {`key`, `label`}, `rationale`, `evaluated_at`, `evaluation_id`), each a
 *   string or null, and every string well formed (SQLite stores UTF-8: a lone surrogate would not
 *   come back); otherwise the entry keeps its `eval_results` in its `raw`.
 * An emptied array marks what was taken out: the views refill an empty array from the rows.
 *
 * Everything this step needs is written out here, not borrowed from the write path (store/sqlite/upserts.ts,
 * store/model/rows.ts, store/model/compact.ts), which keeps changing while this step must not: the views' SQL,
 * the score_details and eval_results columns as version 6 has them, and the split of a record.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { parseJson, toJson } from '../../../core/json.js';

type Obj = Record<string, unknown>;

const EVAL_JSON =
  "json_object('score', e.score_text, 'skill', json_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', e.evaluated_at, 'evaluation_id', e.evaluation_id)";

/** True when the value at `path` is an empty array (json_array_length alone also answers 0 for null). */
const emptyArray = (raw: string, path: string) => `(json_type(${raw}, '${path}') = 'array' AND json_array_length(${raw}, '${path}') = 0)`;

/**
 * The full `raw` of the score_details row aliased `d`. Arrays are aggregated over an ordered subquery
 * rather than with `json_group_array(... ORDER BY)`, which only SQLite 3.44 and later parse.
 */
function detailRaw(d: string): string {
  const evals = `SELECT ${EVAL_JSON} AS j FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id ORDER BY e.position`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, '$.eval_results')} THEN json_replace(${d}.raw, '$.eval_results', json((SELECT json_group_array(json(j)) FROM (${evals})))) ELSE ${d}.raw END)`;
}

/** The full `raw` of the role_results row aliased `r`. */
function roleRaw(r: string): string {
  const details = `SELECT ${detailRaw('d')} AS j FROM score_details d WHERE d.role_result_id = ${r}.id ORDER BY d.position`;
  return `(CASE WHEN ${emptyArray(`${r}.raw`, '$.score_details')} THEN json_replace(${r}.raw, '$.score_details', json((SELECT json_group_array(json(j)) FROM (${details})))) ELSE ${r}.raw END)`;
}

const ROLE_COLUMNS = [
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
];
const DETAIL_COLUMNS = [
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
];
const EVAL_COLUMNS = [
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
];

const full = (table: string, columns: string[], alias: string, raw: string) =>
  `CREATE VIEW ${table}_full AS SELECT ${alias}.id, ${columns.map((c) => (c === 'raw' ? `${raw} AS raw` : `${alias}.${c}`)).join(', ')} FROM ${table} ${alias};`;

export const V6 = `
ALTER TABLE score_details ADD COLUMN position INTEGER;
ALTER TABLE eval_results ADD COLUMN position INTEGER;
${full('role_results', ROLE_COLUMNS, 'r', roleRaw('r'))}
${full('score_details', DETAIL_COLUMNS, 'd', detailRaw('d'))}
`;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const NONE: Obj = Object.freeze({});
const obj = (v: unknown): Obj => (v !== null && typeof v === 'object' ? (v as Obj) : NONE);

/** A text column: strings as they are, other scalars as text, objects as JSON. */
function text(v: unknown): string | null {
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

const json = (v: unknown): string | null => (v === undefined || v === null ? null : toJson(v));

// A lone surrogate is the only string UTF-8 cannot carry; a pair is one code point under the u flag.
const LONE_SURROGATE = /\p{Cs}/u;
const plain = (v: unknown) => v === null || (typeof v === 'string' && !LONE_SURROGATE.test(v));

function sameKeys(o: Obj, keys: readonly string[]): boolean {
  const own = Object.keys(o);
  return own.length === keys.length && own.every((k, i) => k === keys[i]);
}

const EVAL_KEYS = ['score', 'skill', 'rationale', 'evaluated_at', 'evaluation_id'];

/** True when the views rebuild this eval result exactly from its eval_results row. */
function rebuildableEval(e: unknown): boolean {
  if (!isObject(e) || !sameKeys(e, EVAL_KEYS)) return false;
  const skill = e.skill;
  if (!isObject(skill) || !sameKeys(skill, ['key', 'label'])) return false;
  return plain(e.score) && plain(skill.key) && plain(skill.label) && plain(e.rationale) && plain(e.evaluated_at) && plain(e.evaluation_id);
}

/** score_details values of one entry (DETAIL_COLUMNS, then its id). */
function detailValues(resultId: string, campaignId: string, d: Obj, id: string, raw: string, position: number): unknown[] {
  const user = obj(d.user);
  const scenario = obj(d.scenario);
  return [
    resultId,
    campaignId,
    text(user.id),
    text(user.email),
    text(scenario.id),
    text(scenario.name),
    text(obj(scenario.type).key),
    text(obj(d.session).id),
    real(d.score),
    json(d.feedback),
    text(d.created_at),
    text(d.updated_at),
    raw,
    position,
    id,
  ];
}

/** eval_results values of a score detail's `eval_results` (EVAL_COLUMNS; none when it is not an array). */
function evalValues(detailId: string, evals: unknown, campaignId: string): unknown[][] {
  if (!Array.isArray(evals)) return [];
  return evals.map((e, position) => {
    const ev = obj(e);
    const skill = obj(ev.skill);
    return [
      'score_detail',
      detailId,
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

/** A record split into its stored `raw` (stripped of its details when `stripped`) and its details' rows. */
function split(record: Obj, raw: string, resultId: string, campaignId: string) {
  const entries = record.score_details as unknown[];
  const seen = new Set<string>();
  const details: Array<{ values: unknown[]; evals: unknown[][] }> = [];
  let whole = true;
  for (let i = 0; i < entries.length; i++) {
    const d = entries[i];
    const id = isObject(d) ? text(d.id) : null;
    if (!isObject(d) || id === null || seen.has(id)) {
      whole = false;
      continue;
    }
    seen.add(id);
    const evals = d.eval_results;
    const apart = Array.isArray(evals) && evals.length > 0 && evals.every(rebuildableEval);
    const detailRaw = apart ? toJson({ ...d, eval_results: [] }) : toJson(d);
    details.push({ values: detailValues(resultId, campaignId, d, id, detailRaw, i), evals: evalValues(id, evals, campaignId) });
  }
  const stripped = whole && entries.length > 0;
  return { raw: stripped ? toJson({ ...record, score_details: [] }) : raw, stripped, details };
}

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Rewrites every stored DETAILED record into version 6's shape; returns how many were rewritten. */
export function compactV6(db: BetterSqlite3.Database): number {
  const next = db.prepare("SELECT id, campaign_id, raw FROM role_results WHERE report_type = 'DETAILED' AND id > ? ORDER BY id LIMIT 500");
  const deleteEvals = db.prepare(
    "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id IN (SELECT id FROM score_details WHERE role_result_id = ?)",
  );
  const deleteDetails = db.prepare('DELETE FROM score_details WHERE role_result_id = ?');
  const setRaw = db.prepare('UPDATE role_results SET raw = ? WHERE id = ?');
  // A detail id another result already holds stays with it (no change).
  const upsertDetail = db.prepare(
    `INSERT INTO score_details (${DETAIL_COLUMNS.join(', ')}, id) VALUES (${marks(DETAIL_COLUMNS.length + 1)}) ` +
      `ON CONFLICT (id) DO UPDATE SET ${DETAIL_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')} ` +
      'WHERE score_details.role_result_id = excluded.role_result_id',
  );
  const insertEval = db.prepare(`INSERT INTO eval_results (${EVAL_COLUMNS.join(', ')}) VALUES (${marks(EVAL_COLUMNS.length)})`);
  let after = '';
  let n = 0;
  for (;;) {
    const rows = next.all(after) as Array<{ id: string; campaign_id: string; raw: string }>;
    if (rows.length === 0) return n;
    for (const row of rows) {
      after = row.id;
      let record: unknown;
      try {
        record = parseJson(row.raw);
      } catch {
        continue;
      }
      if (!isObject(record) || !Array.isArray(record.score_details)) continue;
      // A text that would not be written back the same way stays whole (its rows are left as they are).
      if (toJson(record) !== row.raw) continue;
      const s = split(record, row.raw, row.id, row.campaign_id);
      deleteEvals.run(row.id);
      deleteDetails.run(row.id);
      setRaw.run(s.raw, row.id);
      let lost = false;
      for (const d of s.details) {
        if (upsertDetail.run(...d.values).changes === 1) for (const e of d.evals) insertEval.run(...e);
        else lost = true;
      }
      // A detail id held by another result cannot be rebuilt from this one's rows: keep its whole text.
      if (lost && s.stripped) setRaw.run(row.raw, row.id);
      n++;
    }
  }
}
