/** Records as the sync hands them to a mirror, and the spec's eval result shape (the compaction tests). */
import { parseJson, toJson } from '../../src/core/json.js';
import type { CheckedRecord } from '../../src/core/types.js';

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
