/**
 * U+0000 and lone surrogates, into PostgreSQL: text and jsonb cannot hold U+0000, and jsonb cannot
 * hold a lone surrogate either; such a record would fail its page for good on every pull. The record
 * rules quarantine it before the sink sees it (store/model/storable.ts unstorable), on PostgreSQL as
 * on every backend, and the rest of its page is stored exactly. What has no quarantine, a campaign of
 * the list, is kept with U+FFFD in their place (store/pg/statements.ts).
 */
import { expect, it } from 'vitest';
import { openPgMirror } from '../../../../src/store/pg/open.js';
import { runPass } from '../../../../src/sync/pass.js';
import { CAMPAIGN, campaignList, mockClient, mockService, passDefaults } from '../../../helpers/mock.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';

// A NUL in a text column (scenario name), in a key; a lone surrogate (jsonb rejects it); a backslash
// before "u0000" as text (no NUL: stored as it is); a surrogate pair (an emoji, stored as it is).
const PAGE = `{"data":[
  {"id":"nul-1","campaign":{"id":"${CAMPAIGN}"},"scenario":{"name":"Bill\\u0000ing"},"eval_results":[],"order_index":1},
  {"id":"key-2","campaign":{"id":"${CAMPAIGN}"},"feedback":{"k\\u0000":1},"eval_results":[],"order_index":2},
  {"id":"plain-3","campaign":{"id":"${CAMPAIGN}"},"scenario":{"name":"C:\\\\u0000dir"},"feedback":{"pair":"\\ud83d\\ude00"},"eval_results":[],"order_index":3},
  {"id":"sur-4","campaign":{"id":"${CAMPAIGN}"},"feedback":{"note":"x\\ud800y"},"eval_results":[],"order_index":4}
],"has_more":false,"last_record_index":4}`;

describePg('U+0000 and lone surrogates into PostgreSQL', () => {
  it('the records holding them are quarantined with their field named, the others stored exactly; a campaign name keeps U+FFFD', async () => {
    const list = campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION', name: 'Sup\u0000port' });
    const { agent } = mockService((url) => (url.pathname === '/v1/campaigns' ? { body: list } : { body: PAGE }));
    const m = await openPgMirror(PG_URL, freshSchema(), 1);
    try {
      const run = () =>
        runPass({ client: mockClient(agent), sink: m.sink, state: m.state, leases: m.leases }, { ...passDefaults, full: true });
      const first = await run();
      expect(first.streams[0]?.error).toBeUndefined();
      expect(first.streams[0]?.status).toBe('ok');
      expect(first.streams[0]?.inserted).toBe(1);
      expect(first.streams[0]?.cursor).toBe(4n);
      const q = (await m.db.query('SELECT record_id, reason, raw FROM quarantine ORDER BY page_position')).rows;
      expect(q.map((r) => r.record_id)).toEqual(['nul-1', 'key-2', 'sur-4']);
      expect(q[0]?.reason).toMatch(/^scenario\.name: this string holds U\+0000 or a lone surrogate.* — record 1 of 4 \(id nul-1\)/);
      expect(q[1]?.reason).toMatch(/^feedback\["k\\u0000"\]: the name of this member holds U\+0000.* — record 2 of 4 \(id key-2\)/);
      expect(q[2]?.reason).toMatch(/^feedback\.note: this string holds U\+0000 or a lone surrogate.* — record 4 of 4 \(id sur-4\)/);
      // Kept as served: the escapes, as text.
      expect(q[0]?.raw).toContain('"Bill\\u0000ing"');
      expect(q[2]?.raw).toContain('"x\\ud800y"');
      const plain = (await m.db.query("SELECT scenario_name, feedback ->> 'pair' AS pair FROM session_results WHERE id = 'plain-3'"))
        .rows[0];
      expect(plain).toEqual({ scenario_name: 'C:\\u0000dir', pair: '😀' });
      const name = (await m.db.query('SELECT name, raw ->> $1 AS raw_name FROM campaigns', ['name'])).rows[0];
      expect(name).toEqual({ name: 'Sup\uFFFDport', raw_name: 'Sup\uFFFDport' });
      // Read again: nothing changed, nothing quarantined twice.
      const again = await run();
      expect(again.streams[0]?.inserted).toBe(0);
      expect(again.streams[0]?.updated).toBe(0);
      expect((await m.db.query('SELECT count(*)::int AS n FROM quarantine')).rows[0]?.n).toBe(3);
    } finally {
      await m.release();
    }
  });
});
