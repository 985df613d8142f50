/**
 * `reconcile` compares the report type the mirror holds, on every kind of mirror (./mirrors.ts says
 * how to add a case; reconcile --prune is ./mirror.test.ts's): asked for another, it refuses (exit 2)
 * before it changes anything.
 */
import { describe, expect, it } from 'vitest';
import { sharedSim } from '../helpers/shared-sim.js';
import { MIRRORS, type Mirror, ndjsonText, open, unsupported } from './mirrors.js';

/** What a reconcile must not change when it refuses: every stored role record, row or line, and the stream rows. */
async function snapshot(m: Mirror) {
  return {
    rows: await m.rows(),
    stored:
      m.kind === 'ndjson'
        ? { file: ndjsonText(m, 'role_results.ndjson') }
        : {
            roles: await m.sql('SELECT id, report_type, CAST(raw AS TEXT) AS raw FROM role_results ORDER BY id'),
            details: Number((await m.sql('SELECT count(*) AS n FROM score_details'))[0]?.n),
          },
    streams: await m.state(
      'SELECT stream, CAST(cursor AS TEXT) AS cursor, CAST(records AS TEXT) AS records FROM sync_state ORDER BY stream',
    ),
  };
}

describe.each(MIRRORS)('reconcile compares the report type the mirror holds (%s)', (kind) => {
  it('--report-type OVERALL on a DETAILED mirror is exit 2 naming what it mirrors; nothing is rewritten, no stream row added', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sharedSim({ campaigns: 2, records: 20 });
    const m = open(kind);
    const pulled = await m.run(s, 'pull');
    expect(pulled.code, pulled.stderr).toBe(0);
    const role = s.data.campaigns.find((c) => c.type === 'ROLE_SUBMISSION') as (typeof s.data.campaigns)[0];
    const before = await snapshot(m);
    expect(before.rows.filter((r) => r.campaign_id === role.id)).toHaveLength(20);

    for (const spelled of ['overall', 'OVERALL']) {
      const r = await m.run(s, 'reconcile', '--json', '--report-type', spelled);
      expect(r.code, r.stderr).toBe(2);
      const line = r.stderr.trim();
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toMatch(/^campaign-sync: --report-type OVERALL: .*DETAILED/);
      expect(line).toContain(role.name);
      expect(JSON.parse(r.stdout)).toMatchObject({ exit_code: 2 });
      expect(await snapshot(m)).toEqual(before);
    }

    // The report type it mirrors is compared as usual, with counts that agree with each other.
    const ok = await m.run(s, 'reconcile', '--json', '--type', 'role');
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).streams).toMatchObject([
      { report_type: 'DETAILED', served: 20, stored: 20, added: 0, changed: 0, gone: 0 },
    ]);
    expect(await snapshot(m)).toEqual(before);
  });
});
