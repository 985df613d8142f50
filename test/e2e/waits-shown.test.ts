/**
 * Every wait of a second or more is shown on a terminal: `campaigns` waiting out a 429 on the
 * campaign list, and `watch` between passes. In a pseudo-terminal, with no CI variable, as a person
 * runs them; the waits are the simulator's Retry-After and watch's --interval, waited for as
 * conditions on the screen.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { get, sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';

function terminalEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', ...extra };
  for (const name of ['CI', 'NO_COLOR', 'CAMPAIGN_SYNC_DB', 'CAMPAIGN_SYNC_RATE_LIMIT']) if (!(name in extra)) delete env[name];
  return env;
}

describe('waits shown on a terminal', () => {
  it('campaigns, rate-limited on the list: a spinner counts the wait down, then the table', async () => {
    // One request every 4 s: the test's own request takes it, so the CLI's list waits out a 429.
    const s = await sim({ campaigns: 2, records: 1, rateLimit: { count: 1, windowMs: 4000 } });
    expect((await get(s, '/v1/campaigns')).status).toBe(200);
    const tty = ptyCli(['campaigns', '--db', join(tempDir(), 'm.db')], {
      env: terminalEnv({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey }),
      limitMs: 30_000,
    });
    try {
      await tty.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏](\u001b\[\d+m)? 1 request, \d+ s; waiting for rate limit \(429\): \d s/, 15_000);
      expect(await tty.exited).toBe(0);
      for (const c of s.data.campaigns) expect(tty.screen()).toContain(c.name);
    } finally {
      tty.kill();
    }
  });

  it('watch between passes: a countdown to the next one', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const dir = tempDir();
    const tty = ptyCli(['watch', '--db', join(dir, 'm.db'), '--interval', '3s', '--max-cycles', '2'], {
      env: terminalEnv({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey }),
      cwd: dir,
      limitMs: 30_000,
    });
    try {
      await tty.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏](\u001b\[\d+m)? next pass in [1-3] s/, 15_000);
      expect(await tty.exited).toBe(0);
      expect(tty.screen()).toMatch(/pass 2: /);
    } finally {
      tty.kill();
    }
  });
});
