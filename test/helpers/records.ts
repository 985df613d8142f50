/** Records as the sync hands them to a mirror, the spec's eval result shape (the compaction tests), and a stream's row. */
import { parseJson, toJson } from '../../src/core/json.js';
import type { CheckedRecord } from '../../src/core/types.js';
import type { StreamRow } from '../../src/store/port.js';

/** A record as the sync hands it to the mirror: parsed losslessly, `raw` its JSON text. */
export function checked(text: string): CheckedRecord {
  const record = parseJson(text) as Record<string, unknown>;
  return { record, id: String(record.id), orderIndex: 1n, raw: toJson(record) };
}

/** An eval result with the spec's five fields in their order (what compaction takes out), and `over`. */
export const evalOf = (n: number, over: Record<string, unknown> = {}) => ({
  score: `${n}.5`,
  skill: { key: `SKILL_${n}`, label: `Skill ${n}` },
  rationale: `because ${n}`,
  evaluated_at: '2026-01-02T00:00:00.000Z',
  evaluation_id: `e${n}`,
  ...over,
});

/** A stream's row as a mirror reads it back: session stream `c1/session`, never synced, no error; `over` on top. */
export function streamRow(over: Partial<StreamRow> = {}): StreamRow {
  return {
    stream: 'c1/session',
    campaign_id: 'c1',
    endpoint: 'session',
    report_type: null,
    cursor: null,
    records: 0n,
    last_success_at: null,
    last_error: null,
    last_error_at: null,
    unlisted_since: null,
    type_changed_to: null,
    id_conflicts: 0,
    ...over,
  };
}
