/**
 * U+0000 in a record, into PostgreSQL: text and jsonb cannot hold it, and jsonb cannot hold a lone
 * surrogate either; rejected, such a record would fail its page for good (exit 74) on every pull, and
 * dropped, it would be lost silently. So the record is kept with U+FFFD in their place, everywhere,
 * and the pull warns naming it.
 */
import { expect, it } from 'vitest';
import { toJson } from '../../../../src/core/json.js';
import { type CheckedRecord, streamId } from '../../../../src/core/types.js';
import { openPgMirror } from '../../../../src/store/pg/open.js';
import { runPass } from '../../../../src/sync/pass.js';
import { CAMPAIGN, campaignList, mockClient, mockService, passDefaults } from '../../../helpers/mock.js';
import { commitNow, describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';

// A NUL in a text column (scenario name), in a jsonb-only field, in a key, in an eval's rationale; a
// backslash before "u0000" as text (no NUL: it stays as it is); lone surrogates (jsonb rejects them)
// beside a surrogate pair (an emoji, stored as it is).
const PAGE = `{"data":[
  {"id":"nul-1","campaign":{"id":"${CAMPAIGN}"},"scenario":{"name":"Bill\\u0000ing"},"feedback":{"note":"a\\u0000b","k\\u0000":1},
   "eval_results":[{"score":"1","skill":{"key":"K","label":"L"},"rationale":"r\\u0000","evaluated_at":"2026-01-02T00:00:00.000Z","evaluation_id":"e1"}],"order_index":1},
  {"id":"plain-2","campaign":{"id":"${CAMPAIGN}"},"scenario":{"name":"C:\\\\u0000dir"},"eval_results":[],"order_index":2},
  {"id":"sur-3","campaign":{"id":"${CAMPAIGN}"},"scenario":{"name":"\\udc00z"},"feedback":{"note":"x\\ud800y","pair":"\\ud83d\\ude00"},"eval_results":[],"order_index":3}
],"has_more":false,"last_record_index":3}`;

describePg('U+0000 and lone surrogates into PostgreSQL', () => {
  it('are stored as U+FFFD in every column, the record kept, with a warning naming it; a re-read changes nothing', async () => {
    const { agent } = mockService((url) =>
      url.pathname === '/v1/campaigns' ? { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }) } : { body: PAGE },
    );
    const warnings: string[] = [];
    const m = await openPgMirror(PG_URL, freshSchema(), 1, (t) => warnings.push(t));
    try {
      const run = () =>
        runPass({ client: mockClient(agent), sink: m.sink, state: m.state, leases: m.leases }, { ...passDefaults, full: true });
      const first = await run();
      expect(first.streams[0]?.error).toBeUndefined();
      expect(first.streams[0]?.inserted).toBe(3);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('2 records nul-1, sur-3 hold');
      expect(warnings[0]).toContain('U+FFFD');
      const row = (
        await m.db.query(
          "SELECT scenario_name, feedback ->> 'note' AS note, raw -> 'scenario' ->> 'name' AS raw_name, feedback ? 'k\uFFFD' AS key FROM session_results WHERE id = 'nul-1'",
        )
      ).rows[0];
      expect(row).toEqual({ scenario_name: 'Bill\uFFFDing', note: 'a\uFFFDb', raw_name: 'Bill\uFFFDing', key: true });
      const rationale = (await m.db.query("SELECT rationale FROM eval_results WHERE parent_id = 'nul-1'")).rows[0]?.rationale;
      expect(rationale).toBe('r\uFFFD');
      // No NUL there: the text "\u0000" (a backslash, then u0000) is kept as sent.
      const plain = (await m.db.query("SELECT scenario_name FROM session_results WHERE id = 'plain-2'")).rows[0]?.scenario_name;
      expect(plain).toBe('C:\\u0000dir');
      const sur = (
        await m.db.query(
          "SELECT scenario_name, feedback ->> 'note' AS note, feedback ->> 'pair' AS pair FROM session_results WHERE id = 'sur-3'",
        )
      ).rows[0];
      expect(sur).toEqual({ scenario_name: '\uFFFDz', note: 'x\uFFFDy', pair: '😀' });
      // Read again: the same text is stored the same way, so nothing changed.
      const again = await run();
      expect(again.streams[0]?.inserted).toBe(0);
      expect(again.streams[0]?.updated).toBe(0);
    } finally {
      await m.release();
    }
  });

  it('in an OVERALL page (one statement), warn naming exactly the records that hold them', async () => {
    const warnings: string[] = [];
    const m = await openPgMirror(PG_URL, freshSchema(), 1, (t) => warnings.push(t));
    try {
      const id = streamId('c1', 'role', 'OVERALL');
      await m.sink.openStream(id);
      const role = (key: string, k: number, extra: Record<string, unknown>): CheckedRecord => {
        const record = { id: key, order_index: k, overall_score: 3, ...extra };
        return { record, id: key, orderIndex: BigInt(k), raw: toJson(record) };
      };
      const page = [
        role('key-nul', 1, { additional_scores: { 'a\u0000': 1 } }),
        role('plain', 2, { note: 'C:\\u0000dir', tab: '\t' }),
        role('lone', 3, { user: { email: 'x\ud800@example.com' } }),
        role('pair', 4, { note: '\ud83d\ude00' }),
      ];
      await commitNow(m.sink, id, page, { from: undefined, to: 4n });
      expect(warnings).toEqual([expect.stringContaining('2 records key-nul, lone hold U+0000 or a lone surrogate')]);
      const email = (await m.db.query("SELECT user_email FROM role_results WHERE id = 'lone'")).rows[0]?.user_email;
      expect(email).toBe('x\uFFFD@example.com');
    } finally {
      await m.release();
    }
  });
});
