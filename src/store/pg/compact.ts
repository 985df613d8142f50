/**
 * DETAILED records stored once in the PostgreSQL mirror, as the SQLite mirror stores them since
 * schema 6 (store/model/compact.ts): a role result's `raw` without its `score_details` entries (they live
 * in score_details), each entry's `raw` without its `eval_results` (they live in eval_results). An
 * emptied array marks what was taken out; roleRawPg below rebuilds it (the _full views hold the copy
 * store/pg/migrations/v2.ts froze: a change here that they must follow takes a new migration). jsonb
 * stores a DETAILED record three times otherwise (the record, each detail, each eval), and parsing
 * and TOASTing those copies was most of a DETAILED page's server time.
 *
 * The guarantee is PostgreSQL's `raw` guarantee (jsonb: the same value as sent, keys and spacing
 * normalised): `role_results_full.raw = <the record as sent>::jsonb` for every record. Only what comes
 * back equal is taken out: store/model/compact.ts's rules, and an eval's `evaluated_at` null or an ISO text
 * as `Date.toISOString` writes it (eval_results holds it as timestamptz, and gives it back that way).
 */
import { toJson } from '../../core/json.js';
import type { CheckedRecord } from '../../core/types.js';
import { rebuildableEval } from '../model/compact.js';
import { detailValues, evalRows, text, type Values } from '../model/rows.js';

/** A score detail's row and its eval results' rows. */
export interface PgDetail {
  id: string;
  values: Values;
  evals: Values[];
}

/** What a DETAILED record writes: its role_results `raw` (without its details when `stripped`), and its details. */
export interface PgSplit {
  raw: string;
  stripped: boolean;
  details: PgDetail[];
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** An ISO text timestamptz gives back unchanged (to_char below), or null. */
function isoOrNull(v: unknown): boolean {
  if (v === null) return true;
  if (typeof v !== 'string' || v.length !== 24) return false;
  const t = Date.parse(v);
  return !Number.isNaN(t) && new Date(t).toISOString() === v;
}

/** True when `rawSql` rebuilds this eval result exactly from its eval_results row. */
export function pgRebuildableEval(e: unknown): boolean {
  return rebuildableEval(e) && isoOrNull((e as Obj).evaluated_at);
}

/**
 * The rows of a record whose `score_details` is an array (the caller checks). `taken` holds the
 * detail ids earlier records of the page claimed: an entry repeating one stays in this record's
 * `raw` (it is not stored for it), as an entry without an id does.
 */
export function splitPg(r: CheckedRecord, campaignId: string, taken: Set<string>): PgSplit {
  const entries = r.record.score_details as unknown[];
  const seen = new Set<string>();
  const details: PgDetail[] = [];
  let whole = true;
  for (let i = 0; i < entries.length; i++) {
    const d = entries[i];
    const id = isObject(d) ? text(d.id) : null;
    if (!isObject(d) || id === null || seen.has(id) || taken.has(id)) {
      whole = false;
      continue;
    }
    seen.add(id);
    const evals = d.eval_results;
    const apart = Array.isArray(evals) && evals.length > 0 && evals.every(pgRebuildableEval);
    const raw = apart ? toJson({ ...d, eval_results: [] }) : toJson(d);
    details.push({ id, values: detailValues(r.id, campaignId, d, raw, i), evals: evalRows('score_detail', id, evals, campaignId) });
  }
  for (const id of seen) taken.add(id);
  const stripped = whole && entries.length > 0;
  return { raw: stripped ? toJson({ ...r.record, score_details: [] }) : r.raw, stripped, details };
}

const emptyArray = (raw: string, key: string) =>
  `(jsonb_typeof(${raw} -> '${key}') = 'array' AND jsonb_array_length(${raw} -> '${key}') = 0)`;

const EVAL_JSONB =
  "jsonb_build_object('score', e.score_text, 'skill', jsonb_build_object('key', e.skill_key, 'label', e.skill_label), " +
  "'rationale', e.rationale, 'evaluated_at', to_char(e.evaluated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), " +
  "'evaluation_id', e.evaluation_id)";

/** The full `raw` of the score_details row aliased `d`. */
export function detailRawPg(d: string): string {
  const evals = `SELECT jsonb_agg(${EVAL_JSONB} ORDER BY e.position) FROM eval_results e WHERE e.parent_type = 'score_detail' AND e.parent_id = ${d}.id`;
  return `(CASE WHEN ${emptyArray(`${d}.raw`, 'eval_results')} THEN jsonb_set(${d}.raw, '{eval_results}', coalesce((${evals}), '[]'::jsonb)) ELSE ${d}.raw END)`;
}

/** The full `raw` of the role_results row aliased `r`. */
export function roleRawPg(r: string): string {
  const details = `SELECT jsonb_agg(${detailRawPg('d')} ORDER BY d.position) FROM score_details d WHERE d.role_result_id = ${r}.id`;
  return `(CASE WHEN ${emptyArray(`${r}.raw`, 'score_details')} THEN jsonb_set(${r}.raw, '{score_details}', coalesce((${details}), '[]'::jsonb)) ELSE ${r}.raw END)`;
}
