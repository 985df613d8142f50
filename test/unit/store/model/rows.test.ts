/** Record -> row as pure data (store/model/rows.ts): values line up with their table's columns, no database involved. */
import { describe, expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import type { CheckedRecord } from '../../../../src/core/types.js';
import { splitDetailed } from '../../../../src/store/model/compact.js';
import { COLUMNS, campaignRow, evalRows, roleRow, sessionRow } from '../../../../src/store/model/rows.js';

const evalResult = {
  score: '4.5',
  skill: { key: 'JUDGMENT', label: 'Judgment' },
  rationale: 'ok',
  evaluated_at: '2026-01-02T00:00:00Z',
  evaluation_id: 'e1',
};
const scenario = { id: 's1', name: 'Angry client', type: { key: 'EMAIL', label: 'Email' } };

function checked(record: Record<string, unknown>, orderIndex: bigint): CheckedRecord {
  return { record, id: record.id as string, orderIndex, raw: toJson(record) };
}

const byColumn = (table: keyof typeof COLUMNS, values: unknown[]) => Object.fromEntries(COLUMNS[table].map((c, i) => [c, values[i]]));

describe('rows', () => {
  it('a flat session record (the session reference) fills the same columns; nested values win over flat ones', () => {
    const feedback = {
      key_strengths: [{ title: 'Tone', strength: 'Calm' }],
      areas_for_growths: [{ title: 'Pace', improvement_area: 'Slower' }],
    };
    const flat = checked(
      {
        id: 'r2',
        campaign_id: 'c1',
        user_id: 'u1',
        email: 'a@b.c',
        session_id: 'sess',
        scenario_score: 0,
        scenario_name: 'Angry client',
        scenario_type: { key: 'CHAT', label: 'Chat' },
        feedback,
        order_index: 7,
      },
      7n,
    );
    expect(byColumn('session_results', sessionRow(flat, 'c1'))).toMatchObject({
      campaign_id: 'c1',
      user_id: 'u1',
      user_email: 'a@b.c',
      session_id: 'sess',
      scenario_id: null,
      scenario_name: 'Angry client',
      scenario_type: 'CHAT',
      score: 0,
      feedback: toJson(feedback),
      raw: flat.raw,
    });
    const both = checked({ id: 'r3', user: { id: 'nested' }, user_id: 'flat', scenario_type: 'VOICE_CHAT', order_index: 8 }, 8n);
    expect(byColumn('session_results', sessionRow(both, 'c1'))).toMatchObject({
      user_id: 'nested',
      user_email: null,
      scenario_type: 'VOICE_CHAT',
    });
    expect(
      byColumn('role_results', roleRow(checked({ id: 'r4', user_id: 'u9', email: 'z@y.x', order_index: 9 }, 9n), 'c1', 'OVERALL')),
    ).toMatchObject({
      user_id: 'u9',
      user_email: 'z@y.x',
    });
  });

  it('a session record fills every session_results column, int64 exact', () => {
    const r = checked(
      {
        id: 'r1',
        score: 3.5,
        campaign: { id: 'c1', name: 'x' },
        user: { id: 'u1', email: 'a@b.c' },
        session: { id: 'sess' },
        scenario,
        eval_results: [evalResult],
        feedback: null,
        additional_scores: { cefr: { score: 'B2' } },
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:01',
        order_index: 2n ** 62n,
      },
      2n ** 62n,
    );
    const values = sessionRow(r, 'c1');
    // The columns' values, then the key: the order the statements bind.
    expect(values).toHaveLength(COLUMNS.session_results.length + 1);
    expect(values.at(-1)).toBe('r1');
    expect(byColumn('session_results', values)).toEqual({
      campaign_id: 'c1',
      user_id: 'u1',
      user_email: 'a@b.c',
      session_id: 'sess',
      scenario_id: 's1',
      scenario_name: 'Angry client',
      scenario_type: 'EMAIL',
      score: 3.5,
      cefr: 'B2',
      feedback: null,
      additional_scores: '{"cefr":{"score":"B2"}}',
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:01',
      order_index: 2n ** 62n,
      raw: r.raw,
    });
  });

  it('role, score detail, eval and campaign rows line up with their columns', () => {
    const r = checked(
      {
        id: 'r2',
        recommendation_status: 'RECOMMENDED',
        overall_score: 4,
        user: { id: 'u2', email: 'x@y.z' },
        score_details: [
          {
            id: 'd1',
            user: { id: 'u2', email: 'x@y.z' },
            scenario,
            session: { id: 's' },
            score: 2,
            eval_results: [evalResult],
            feedback: null,
          },
          { no: 'id' },
        ],
        order_index: 7,
      },
      7n,
    );
    expect(byColumn('role_results', roleRow(r, 'c2', 'DETAILED'))).toMatchObject({
      recommendation_status: 'RECOMMENDED',
      overall_score: 4,
      cefr: null,
      report_type: 'DETAILED',
      order_index: 7n,
    });
    const details = splitDetailed(r, 'c2').details;
    expect(details).toHaveLength(1);
    expect(details[0]?.values).toHaveLength(COLUMNS.score_details.length + 1);
    expect(details[0]?.values.at(-1)).toBe('d1');
    expect(roleRow(r, 'c2', 'DETAILED').at(-1)).toBe('r2');
    expect(byColumn('score_details', details[0]?.values ?? [])).toMatchObject({ role_result_id: 'r2', scenario_type: 'EMAIL', score: 2 });
    const evals = details[0]?.evals ?? [];
    expect(evals.map((v) => byColumn('eval_results', v))).toEqual([
      {
        parent_type: 'score_detail',
        parent_id: 'd1',
        evaluation_id: 'e1',
        skill_key: 'JUDGMENT',
        skill_label: 'Judgment',
        score: 4.5,
        score_text: '4.5',
        rationale: 'ok',
        evaluated_at: '2026-01-02T00:00:00Z',
        campaign_id: 'c2',
        position: 0,
      },
    ]);
    expect(evalRows('session_result', 'x', null, 'c')).toEqual([]);
    const campaign = campaignRow({ id: 'c', name: 'n', type: 'ROLE_SUBMISSION', extra: 1 }, 'now');
    expect(campaign.at(-1)).toBe('c');
    expect(byColumn('campaigns', campaign)).toEqual({
      name: 'n',
      display_name: null,
      type: 'ROLE_SUBMISSION',
      created_at: null,
      raw: '{"id":"c","name":"n","type":"ROLE_SUBMISSION","extra":1}',
      seen_at: 'now',
    });
  });
});
