/**
 * `--campaign` takes a unique prefix of a campaign's id (at least 8 characters), as git takes a
 * hash's, wherever it takes an id: pull against the service's list, export and reset against the
 * mirror's campaigns. A prefix that starts two ids is exit 2 listing them; a shorter one is no prefix.
 * Tables show ids cut to such a prefix, so what a narrow terminal shows can be typed back.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { front } from '../helpers/front.js';
import { sim } from '../helpers/index.js';
import { can, MIRRORS, open, unsupported } from './mirrors.js';

interface StreamDoc {
  campaign_id: string;
  cursor: string | null;
  status: string;
}

describe.each(MIRRORS)('--campaign <id prefix> (%s)', (kind) => {
  it('a unique 8-character prefix selects its campaign in pull, export and reset; 7 characters are no prefix', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 4, records: 6 });
    const m = open(kind);
    const [first, second] = s.data.campaigns as [
      RunningSimulator['data']['campaigns'][number],
      RunningSimulator['data']['campaigns'][number],
    ];
    const prefix = first.id.slice(0, 8);

    const pulled = await m.run(s, 'pull', '--campaign', prefix, '--json');
    expect(pulled.code, pulled.stderr).toBe(0);
    expect((JSON.parse(pulled.stdout) as { streams: StreamDoc[] }).streams.map((x) => x.campaign_id)).toEqual([first.id]);
    const short = await m.run(s, 'pull', '--campaign', first.id.slice(0, 7));
    expect(short.code).toBe(2);
    expect(short.stderr).toBe(
      `campaign-sync: --campaign: no accessible campaign has the id, name or id prefix "${first.id.slice(0, 7)}" (see \`campaign-sync campaigns\`)\n`,
    );

    expect((await m.run(s, 'pull', '--campaign', second.id.slice(0, 12))).code).toBe(0);
    if (can(kind, 'export')) {
      const exported = await m.run(
        s,
        'export',
        '--table',
        first.type === 'SESSION_COMPLETION' ? 'session-results' : 'role-results',
        '--campaign',
        prefix,
        '--format',
        'ndjson',
      );
      expect(exported.code, exported.stderr).toBe(0);
      const rows = exported.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { campaign_id: string });
      expect(rows).toHaveLength(6);
      expect(new Set(rows.map((r) => r.campaign_id))).toEqual(new Set([first.id]));
    }

    const reset = await m.run(s, 'reset', '--campaign', prefix, '--json');
    expect(reset.code, reset.stderr).toBe(0);
    const status = await m.run(s, 'status', '--json');
    const cursors = Object.fromEntries(
      (JSON.parse(status.stdout) as { streams: StreamDoc[] }).streams.map((x) => [x.campaign_id, x.cursor]),
    );
    expect(cursors[first.id]).toBeNull();
    expect(cursors[second.id]).not.toBeNull();
  });

  it('a prefix that starts two ids is exit 2 listing both, in pull, export and reset; more of the id tells them apart', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 4 });
    const f = await front(s.url);
    const real = s.data.campaigns[0] as RunningSimulator['data']['campaigns'][number];
    const prefix = real.id.slice(0, 8);
    // A campaign whose id starts as the real one's: the service may list it, the mirror then holds both.
    const twin = {
      id: `${prefix}-0000-4000-8000-000000000000`,
      name: 'twin-campaign',
      display_name: 'Twin',
      type: real.type,
      created_at: real.created_at,
    };
    f.state.extraCampaigns = [twin];
    const viaFront = { ...s, url: f.url } as RunningSimulator;
    const m = open(kind);
    // One mirror, one service: every run that syncs goes through the front, the service's one URL here.
    // (The service has no results for the twin: the real campaign alone is pulled.)
    expect((await m.run(viaFront, 'pull', '--campaign', real.id)).code).toBe(0);
    // The twin reaches the mirror's campaigns table as any listed campaign does.
    expect((await m.run(viaFront, 'campaigns')).code).toBe(0);

    const ambiguous = `campaign-sync: --campaign: "${prefix}" is the start of 2 campaigns' ids: ${[`${real.id} (${real.name})`, `${twin.id} (twin-campaign)`].sort().join(', ')}; give more of the id, or the name\n`;
    const pulled = await m.run(viaFront, 'pull', '--campaign', prefix);
    expect(pulled.code).toBe(2);
    expect(pulled.stderr).toBe(ambiguous);
    const reset = await m.run(s, 'reset', '--campaign', prefix);
    expect(reset.code).toBe(2);
    expect(reset.stderr).toBe(ambiguous);
    if (can(kind, 'export')) {
      const exported = await m.run(s, 'export', '--table', 'campaigns', '--campaign', prefix, '--format', 'ndjson');
      expect(exported.code).toBe(2);
      expect(exported.stderr).toBe(ambiguous);
      expect(exported.stdout).toBe('');
    }
    // One character past where they part: the real one alone.
    const longer = real.id.slice(0, 10);
    const one = await m.run(s, 'reset', '--campaign', longer, '--json');
    expect(one.code, one.stderr).toBe(0);
  });
});
