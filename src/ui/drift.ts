/** `status`'s lines for drift: what appeared in or disappeared from a stream's records since it was last reported. */
import type { DriftChange } from '../core/drift.js';
import { showText } from './escape.js';

function what(c: DriftChange): string {
  return c.kind === 'field' ? `field ${c.value}` : `${c.kind} value ${c.value}`;
}

/** One line per change; the stream and record id came from the service: escaped. */
export function driftLines(changes: readonly DriftChange[]): string[] {
  return changes.map((c) =>
    showText(
      c.change === 'appeared'
        ? `drift: stream ${c.stream}: ${what(c)} appeared (first in record ${c.recordId}, ${c.at})`
        : `drift: stream ${c.stream}: ${what(c)} disappeared (no record of the full read at ${c.at} carried it; it was first in record ${c.recordId})`,
    ),
  );
}

/** The changes in status --json. */
export function driftDocument(changes: readonly DriftChange[]) {
  return changes.map((c) => ({ stream: c.stream, change: c.change, kind: c.kind, value: c.value, record_id: c.recordId, at: c.at }));
}
