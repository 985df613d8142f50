/**
 * Malformed records on purpose (`simulate --malformed`): every Nth record of each campaign is served
 * failing one record rule of campaign-sync (sync/records.ts), the kinds taken in turn, so that a
 * pipeline's handling of the quarantine can be rehearsed; `--malformed-for` (or `fix()` in tests)
 * then serves them whole again, for `quarantine retry` to store them. The envelope still names the
 * true last order_index: a page stays sound as a whole.
 */
import { UsageError } from '../errors.js';

export const MALFORMED_KINDS = ['id', 'score', 'campaign', 'order-index'] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

/** Which records are malformed, and how. */
export interface MalformedPlan {
  /** Every Nth record of a campaign (its Nth, 2Nth, ...). */
  every: number;
  /** Taken in turn: the first malformed record gets the first kind, and so on. */
  kinds: readonly MalformedKind[];
}

/** Parses `--malformed N` or `--malformed N:kind,kind` (kinds: id, score, campaign, order-index; default all). */
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

/** The record (as shaped for the wire) made to fail `kind`; a copy, the data untouched. */
export function malform(record: Record<string, unknown>, kind: MalformedKind): Record<string, unknown> {
  const out = { ...record };
  if (kind === 'id') delete out.id;
  else if (kind === 'order-index') out.order_index = 'n/a';
  else if (kind === 'score') {
    const field = ['overall_score', 'scenario_score', 'score'].find((f) => f in out) ?? 'score';
    out[field] = 'high';
  } else if (out.campaign !== null && typeof out.campaign === 'object') out.campaign = { ...(out.campaign as object), id: OTHER_CAMPAIGN };
  else out.campaign_id = OTHER_CAMPAIGN;
  return out;
}
