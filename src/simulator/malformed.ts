/**
 * Malformed records on purpose (`simulate --malformed`): every Nth record of each campaign is served
 * failing one record rule of campaign-sync (sync/records.ts), the kinds taken in turn, so that a
 * pipeline's handling of the quarantine can be rehearsed; `--malformed-for` (or `fix()` in tests)
 * then serves them whole again, for `quarantine retry` to store them. The envelope still names the
 * true last order_index: a page stays sound as a whole.
 *
 * The last four kinds are records no database could hold as they are (store/model/quarantine.ts
 * unstorable): nested 5,000 levels deep, a string holding U+0000, a score of 1e400 (past a double's
 * range), an order_index past int64.
 */
import { UsageError } from '../errors.js';

export const MALFORMED_KINDS = ['id', 'score', 'campaign', 'order-index', 'deep', 'nul', 'huge-number', 'int64'] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

/** Which records are malformed, and how. */
export interface MalformedPlan {
  /** Every Nth record of a campaign (its Nth, 2Nth, ...). */
  every: number;
  /** Taken in turn: the first malformed record gets the first kind, and so on. */
  kinds: readonly MalformedKind[];
}

/** Parses `--malformed N` or `--malformed N:kind,kind` (kinds: MALFORMED_KINDS; default all). */
export function parseMalformed(text: string): MalformedPlan {
  const [count, list] = text.split(':', 2).map((s) => s.trim());
  const every = /^\d+$/.test(count ?? '') ? Number(count) : Number.NaN;
  if (!Number.isSafeInteger(every) || every < 1) {
    throw new UsageError(`--malformed: "${text}" should be N (every Nth record of a campaign) or N:kinds, with N a whole number >= 1`);
  }
  if (list === undefined) return { every, kinds: MALFORMED_KINDS };
  const kinds = list.split(',').map((k) => k.trim());
  for (const k of kinds) {
    if (!MALFORMED_KINDS.includes(k as MalformedKind))
      throw new UsageError(`--malformed: unknown kind "${k}" (known: ${MALFORMED_KINDS.join(', ')})`);
  }
  return { every, kinds: kinds as MalformedKind[] };
}

/** The kind of record `index` (0-based in its campaign), or undefined for a record served whole. */
export function malformedKind(plan: MalformedPlan, index: number): MalformedKind | undefined {
  if ((index + 1) % plan.every !== 0) return undefined;
  return plan.kinds[((index + 1) / plan.every - 1) % plan.kinds.length];
}

/** A campaign id no campaign has. */
const OTHER_CAMPAIGN = '00000000-0000-4000-8000-00000000bad0';

/** How deep a `deep` record is nested: past every backend's limit but PostgreSQL's default one (about 13,000). */
export const DEEP_LEVELS = 5000;

/**
 * The JSON text of a `huge-number` record's score stands as this string in the value, and is put in
 * its place by wireText: no JavaScript number is 1e400.
 */
const HUGE_NUMBER = 'campaign-sync-simulator:huge-number';

/** A page's JSON text with each `huge-number` score written as the number 1e400. */
export function wireText(text: string): string {
  return text.includes(HUGE_NUMBER) ? text.replaceAll(JSON.stringify(HUGE_NUMBER), '1e400') : text;
}

/** The record (as shaped for the wire) made to fail `kind`; a copy, the data untouched. */
export function malform(record: Record<string, unknown>, kind: MalformedKind): Record<string, unknown> {
  const out = { ...record };
  const scoreField = () => ['overall_score', 'scenario_score', 'score'].find((f) => f in out) ?? 'score';
  if (kind === 'id') delete out.id;
  else if (kind === 'order-index') out.order_index = 'n/a';
  else if (kind === 'int64') out.order_index = 2n ** 63n;
  else if (kind === 'score') out[scoreField()] = 'high';
  else if (kind === 'huge-number') out[scoreField()] = HUGE_NUMBER;
  else if (kind === 'nul') out.note = 'typed on a terminal that sent \u0000 here';
  else if (kind === 'deep') {
    let nested: Record<string, unknown> = { end: true };
    for (let i = 1; i < DEEP_LEVELS; i++) nested = { level: nested };
    out.trace = nested;
  } else if (out.campaign !== null && typeof out.campaign === 'object') out.campaign = { ...(out.campaign as object), id: OTHER_CAMPAIGN };
  else out.campaign_id = OTHER_CAMPAIGN;
  return out;
}
