/**
 * The vocabulary of drift: what the mirror remembers a stream's records carried (field paths, and the
 * values of a few enumerations), shared by the sync engine (sync/drift.ts) and the stores.
 */

/** `field` for a field path; otherwise the enumeration a value belongs to. */
export type DriftKind = 'field' | 'recommendation_status' | 'skill' | 'scenario_type' | 'report_type';

/** A field path or enumeration value seen in a stream for the first time (or again after it disappeared). */
export interface DriftItem {
  kind: DriftKind;
  value: string;
  /** The id of the first record of the pass that carried it: an example, never a person's value. */
  recordId: string;
}

/** A path or value a stream's mirror knows, as its store holds it. */
export interface KnownDrift {
  kind: DriftKind;
  value: string;
  /** False once a full read of the stream no longer carried it. */
  present: boolean;
}

/** What `status` reports once: a path or value that appeared in, or disappeared from, a stream. */
export interface DriftChange {
  stream: string;
  change: 'appeared' | 'disappeared';
  kind: DriftKind;
  value: string;
  /** An example: the first record that carried it. */
  recordId: string;
  /** When it appeared, or when the full read that missed it ran. */
  at: string;
}

/** What `--contract` does when a stream with a baseline brings a new field path or value. */
export const CONTRACT_MODES = ['warn', 'strict'] as const;
export type ContractMode = (typeof CONTRACT_MODES)[number];

/** A page's new paths and values, written with the page: `report` false for a stream's baseline (never reported). */
export interface DriftPage {
  items: DriftItem[];
  report: boolean;
}
