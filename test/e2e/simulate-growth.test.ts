import { describe, expect, it } from 'vitest';
import { cli, startCli } from '../helpers/index.js';

describe('simulate --growth-campaigns', () => {
  it('grows only the first N campaigns; without --growth it is a usage error', async () => {
    const run = startCli([
      'simulate',
      '--port',
      '0',
      '--records',
      '3',
      '--campaigns',
      '4',
      '--growth',
      '20/1s',
      '--growth-campaigns',
      '1',
      '--json',
    ]);
    try {
      await run.waitFor(/"url":/);
      const info = JSON.parse(run.stdout().split('\n')[0] as string);
      const headers = { authorization: `Bearer ${info.api_key}` };
      const list = ((await (await fetch(`${info.url}/v1/campaigns`, { headers })).json()) as { data: Array<{ id: string; type: string }> })
        .data;
      await new Promise((r) => setTimeout(r, 600));
      const sizes: number[] = [];
      for (const c of list.filter((x) => x.type === 'SESSION_COMPLETION')) {
        const page = (await (
          await fetch(`${info.url}/v1/campaigns/session/results?campaign_id=${c.id}&limit=100`, { headers })
        ).json()) as {
          data: unknown[];
        };
        sizes.push(page.data.length);
      }
      // Campaign 1 (the first session campaign) grew; campaign 3 kept its 3 records.
      expect(sizes[0]).toBeGreaterThan(3);
      expect(sizes[1]).toBe(3);
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
    const bad = await cli(['simulate', '--port', '0', '--growth-campaigns', '2']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('campaign-sync: --growth-campaigns needs --growth');
  });

  it('--order-index-start past int64 for the records it would serve: exit 2 at start-up, naming the flag and the largest start', async () => {
    const r = await cli(['simulate', '--port', '0', '--order-index-start', '9223372036854775000']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'campaign-sync: --order-index-start 9223372036854775000: 250 records a campaign would reach order_index 9223372036854777499, ' +
        'past int64 (9223372036854775807); the largest start that fits is 9223372036854773308\n',
    );
  });
});
