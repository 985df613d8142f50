/** What both backends share of the drift ledger: how a pending row reads as a change, and the erased example. */
import type { DriftChange, DriftKind } from '../../core/drift.js';

/** The example of a path or value whose record `forget` erased. Shared with PostgreSQL. */
export const ERASED_EXAMPLE = '(erased)';

export interface PendingRow {
  stream: string;
  kind: DriftKind;
  value: string;
  record_id: string;
  seen_at: string;
  gone_at: string | null;
  pending: 'appeared' | 'disappeared';
}

/** The changes of pending rows, for status. Shared with PostgreSQL (store/pg/drift.ts). */
export function driftChanges(rows: readonly PendingRow[]): DriftChange[] {
  return rows.map((r) => ({
    stream: r.stream,
    change: r.pending,
    kind: r.kind,
    value: r.value,
    recordId: r.record_id,
    at: r.pending === 'disappeared' ? String(r.gone_at ?? r.seen_at) : String(r.seen_at),
  }));
}
