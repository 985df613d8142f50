/**
 * Failures readable in a real terminal of 80 columns (a pseudo-terminal, as a person's): the help
 * wraps at the terminal's width between words; `status` shows why a stream fails (the error text
 * leads with its reason); `campaigns` shows every name whole, what `--campaign` takes.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { front } from '../helpers/front.js';
import { cli, sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';

/** A terminal's environment: no CI (it turns spinners off), none of our settings from the tester's shell. */
function terminalEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', ...extra };
  for (const name of ['CI', 'NO_COLOR', 'CAMPAIGN_SYNC_BASE_URL', 'CAMPAIGN_SYNC_API_KEY', 'CAMPAIGN_SYNC_DB', 'CAMPAIGN_SYNC_RATE_LIMIT'])
    if (!(name in extra)) delete env[name];
  return env;
}

/** The lines as the screen shows them: escape sequences out, each line from where the cursor last went to its first column. */
function shownLines(screen: string): string[] {
  return screen
    .split(/\r?\n/)
    .map((l) => (l.split('\u001b[1G').at(-1) as string).replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, ''));
}

describe('at 80 columns', () => {
  it('--help wraps its descriptions at the width, between words', async () => {
    const tty = ptyCli(['--help'], { env: terminalEnv(), columns: 80 });
    expect(await tty.exited).toBe(0);
    const lines = shownLines(tty.screen());
    for (const line of lines) expect(Array.from(line).length, line).toBeLessThanOrEqual(80);
    // Each command's description, read back across its wrapped lines, is whole: no word broken in two.
    const reconcile = lines.findIndex((l) => /^ {2}reconcile\s/.test(l));
    const text = [lines[reconcile] as string, lines[reconcile + 1] as string, lines[reconcile + 2] as string]
      .map((l) => l.replace(/^ {2}reconcile/, '').trim())
      .join(' ');
    expect(text).toMatch(/^re-read every stream from the start and report records added, changed and gone \(deleted by the service\)/);
    const after = lines.slice(lines.findIndex((l) => l.startsWith('New here?')));
    expect(after.join(' ').replace(/\s+/g, ' ').trim()).toBe(
      'New here? `campaign-sync demo` mirrors a built-in simulator of the service: no key, no network.',
    );
  });

  it("every command's --help fits: no line longer than the terminal, which would break it mid-word", async () => {
    const commands = ['campaigns', 'pull', 'watch', 'status', 'export', 'reset', 'reconcile', 'forget', 'history', 'quarantine'];
    for (const command of [...commands, 'notify-test', 'completion', 'simulate', 'demo']) {
      const tty = ptyCli([command, '--help'], { env: terminalEnv(), columns: 80 });
      expect(await tty.exited, command).toBe(0);
      for (const line of shownLines(tty.screen())) expect(Array.from(line).length, `${command}: ${line}`).toBeLessThanOrEqual(80);
    }
  });

  it('status of a stream failing with 500 shows the 500; campaigns shows every name whole', async () => {
    const s = await sim({ campaigns: 6, records: 3 });
    const f = await front(s.url);
    const failing = s.data.campaigns[1] as { id: string; name: string };
    f.state.fail = {
      campaignId: failing.id,
      status: 500,
      message: 'Internal server error',
      requestId: 'a3c1e2f0-9b8d-4c7e-8f6a-5d4c3b2a1f00',
    };
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await cli(['pull', '--db', db, '--max-retries', '0', '--quiet'], { env })).code).toBe(4);

    const status = ptyCli(['status', '--db', db], { env: terminalEnv(), cwd: dir, columns: 80 });
    expect(await status.exited).toBe(0);
    const rows = shownLines(status.screen()).filter((l) => /^[│┌└]/.test(l));
    for (const line of rows) expect(Array.from(line).length, line).toBeLessThanOrEqual(80);
    const row = rows.find((l) => l.includes(failing.name));
    expect(row, status.screen()).toBeDefined();
    expect(row).toMatch(/ago: 500 /);

    const campaigns = ptyCli(['campaigns', '--db', db], { env: terminalEnv(env), cwd: dir, columns: 80 });
    expect(await campaigns.exited).toBe(0);
    const table = shownLines(campaigns.screen()).filter((l) => /^[│┌└]/.test(l));
    for (const line of table) expect(Array.from(line).length, line).toBeLessThanOrEqual(80);
    for (const c of s.data.campaigns) {
      const line = table.find((l) => l.includes(` ${c.name} `));
      expect(line, `${c.name} whole in:\n${table.join('\n')}`).toBeDefined();
      // The id, cut to a prefix `--campaign` takes (8 characters at least), without an ellipsis.
      expect(line).toMatch(new RegExp(`^│ ${c.id.slice(0, 8)}[0-9a-f-]* +│`));
    }
    expect(table.join('\n')).not.toMatch(/[0-9a-f]…/);
  });
});
