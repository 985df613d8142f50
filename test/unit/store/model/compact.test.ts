/** The one DETAILED split (store/model/compact.ts), and what a backend's options change in it. */
import { describe, expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import { splitDetailed } from '../../../../src/store/model/compact.js';
import { checked } from '../../../helpers/records.js';

const evalOf = (evaluated_at: string) => ({
  score: '4.0',
  skill: { key: 'JUDGMENT', label: 'Judgment' },
  rationale: 'ok',
  evaluated_at,
  evaluation_id: 'e1',
});
const detail = (id: string, evaluated_at = '2026-01-02T00:00:00.000Z') => ({
  id,
  user: { id: 'u1' },
  eval_results: [evalOf(evaluated_at)],
});
const record = (id: string, details: unknown[]) => checked(toJson({ id, user: { id: 'u1' }, score_details: details }));

describe('splitDetailed', () => {
  it('takes out every detail with an id of its own, and the eval results it can rebuild', () => {
    const r = record('r1', [detail('d1'), detail('d2')]);
    const split = splitDetailed(r, 'c1');
    expect(split.stripped).toBe(true);
    expect(split.raw).toBe(toJson({ ...r.record, score_details: [] }));
    expect(split.details.map((d) => [d.id, d.values.at(-3), d.evals.length])).toEqual([
      ['d1', toJson({ ...detail('d1'), eval_results: [] }), 1],
      ['d2', toJson({ ...detail('d2'), eval_results: [] }), 1],
    ]);
  });

  it("keeps in a detail's raw the eval results a backend says it cannot rebuild", () => {
    const r = record('r1', [detail('d1', '2026-01-02T00:00:00Z')]);
    expect(splitDetailed(r, 'c1').details[0]?.values.at(-3)).toBe(toJson({ ...detail('d1', '2026-01-02T00:00:00Z'), eval_results: [] }));
    const strict = splitDetailed(r, 'c1', { rebuildable: () => false });
    expect(strict.stripped).toBe(true);
    expect(strict.details[0]?.values.at(-3)).toBe(toJson(detail('d1', '2026-01-02T00:00:00Z')));
  });

  it('leaves in raw a detail whose id an earlier record of the same write took, and claims its own', () => {
    const taken = new Set<string>();
    const first = splitDetailed(record('r1', [detail('d1')]), 'c1', { taken });
    expect(first.stripped).toBe(true);
    expect([...taken]).toEqual(['d1']);
    const second = record('r2', [detail('d1'), detail('d2')]);
    const split = splitDetailed(second, 'c1', { taken });
    expect(split.stripped).toBe(false);
    expect(split.raw).toBe(second.raw);
    expect(split.details.map((d) => d.id)).toEqual(['d2']);
    expect([...taken].sort()).toEqual(['d1', 'd2']);
    // Without `taken` (SQLite finds a lost id as it writes), the same record takes both out.
    expect(splitDetailed(second, 'c1').details.map((d) => d.id)).toEqual(['d1', 'd2']);
  });
});
