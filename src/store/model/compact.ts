/**
 * A DETAILED role record stored once: its `raw` keeps every field but `score_details`, whose
 * entries live in score_details (each `raw` without its `eval_results`, whose entries live in
 * eval_results), so a DETAILED mirror no longer holds each score detail and each eval result twice.
 * store/sqlite/reassemble.ts rebuilds the exact text the mirror used to keep.
 *
 * Only what can be rebuilt exactly is taken out, so `raw` stays lossless whatever the service sends:
 * - a record's `score_details` only when every entry is an object with an id not seen before in it;
 *   otherwise the record keeps its whole `raw` (its entries with an id are stored as before);
 * - an entry's `eval_results` only when every eval result has exactly the spec's fields in the spec's
 *   order (`score`, `skill` {`key`, `label`}, `rationale`, `evaluated_at`, `evaluation_id`), each a
 *   string or null, and every string well formed (SQLite stores UTF-8: a lone surrogate would not
 *   come back); otherwise the entry keeps its `eval_results` in its `raw`.
 * An emptied array marks what was taken out: reassembly refills an empty array from the rows, which
 * gives an empty array back when there are none.
 *
 * One split for every backend: PostgreSQL (store/pg/compact.ts) narrows which eval results it can
 * rebuild and passes the ids its page statement already claimed (SplitOptions); the rest is this.
 */
import { toJson } from '../../core/json.js';
import type { CheckedRecord } from '../../core/types.js';
import { detailValues, evalRows, text, type Values } from './rows.js';

/** A score detail's row and its eval results' rows. */
export interface DetailRows {
  id: string;
  values: Values;
  evals: Values[];
}

/** What a DETAILED record writes: its role_results `raw` (without its details when `stripped`) and its details. */
export interface SplitRecord {
  raw: string;
  stripped: boolean;
  details: DetailRows[];
}

type Obj = Record<string, unknown>;

const EVAL_KEYS = ['score', 'skill', 'rationale', 'evaluated_at', 'evaluation_id'];

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// A lone surrogate is the only string UTF-8 cannot carry; a pair is one code point under the u flag.
const LONE_SURROGATE = /\p{Cs}/u;

function plain(v: unknown): boolean {
  return v === null || (typeof v === 'string' && !LONE_SURROGATE.test(v));
}

function sameKeys(o: Obj, keys: readonly string[]): boolean {
  const own = Object.keys(o);
  if (own.length !== keys.length) return false;
  for (let i = 0; i < keys.length; i++) if (own[i] !== keys[i]) return false;
  return true;
}

/** True when store/sqlite/reassemble.ts rebuilds this eval result exactly from its eval_results row. */
export function rebuildableEval(e: unknown): boolean {
  if (!isObject(e) || !sameKeys(e, EVAL_KEYS)) return false;
  const skill = e.skill;
  if (!isObject(skill) || !sameKeys(skill, ['key', 'label'])) return false;
  return plain(e.score) && plain(skill.key) && plain(skill.label) && plain(e.rationale) && plain(e.evaluated_at) && plain(e.evaluation_id);
}

/** What a backend's storage asks of the split. */
export interface SplitOptions {
  /** Whether the backend rebuilds this eval result exactly from its row (default: rebuildableEval). */
  rebuildable?: (e: unknown) => boolean;
  /**
   * The detail ids earlier records of the same write claimed, for a backend that writes a page's
   * details in one statement (which cannot write one row twice): an entry repeating one stays in
   * this record's `raw`, as an entry without an id does. This record's ids are added to it.
   */
  taken?: Set<string>;
}

/** The rows of a record whose `score_details` is an array (the caller checks). */
export function splitDetailed(r: CheckedRecord, campaignId: string, options: SplitOptions = {}): SplitRecord {
  const { rebuildable = rebuildableEval, taken } = options;
  const entries = r.record.score_details as unknown[];
  const seen = new Set<string>();
  const details: DetailRows[] = [];
  let whole = true;
  for (let i = 0; i < entries.length; i++) {
    const d = entries[i];
    const id = isObject(d) ? text(d.id) : null;
    if (!isObject(d) || id === null || seen.has(id) || taken?.has(id) === true) {
      whole = false;
      continue;
    }
    seen.add(id);
    const evals = d.eval_results;
    const apart = Array.isArray(evals) && evals.length > 0 && evals.every(rebuildable);
    const raw = apart ? toJson({ ...d, eval_results: [] }) : toJson(d);
    details.push({ id, values: detailValues(r.id, campaignId, d, raw, i), evals: evalRows('score_detail', id, evals, campaignId) });
  }
  if (taken !== undefined) for (const id of seen) taken.add(id);
  const stripped = whole && entries.length > 0;
  return { raw: stripped ? toJson({ ...r.record, score_details: [] }) : r.raw, stripped, details };
}
