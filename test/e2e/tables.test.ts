/**
 * Tables suit where they go: on a terminal, boxed and fitted to its width (low-value columns dropped
 * first, one block a row only below 60 columns); in a pipe, tab-separated values with a header row
 * and no box drawing.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, sim, tempDir } from '../helpers/index.js';
import { ptyCli } from '../helpers/pty.js';

describe('tables', () => {
  it('fit an 80-column terminal, and are TSV in a pipe', async () => {
    const s = await sim({ campaigns: 6, records: 1 });
    const db = join(tempDir(), 'm.db');
    const env = { ...process.env, CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CI: '' };
    const tty = ptyCli(['campaigns', '--db', db], { env });
    expect(await tty.exited).toBe(0);
    // As the screen shows it: the spinner's line (it spins while the list is read) rewritten from its first column by the table.
    const lines = tty
      .screen()
      .split(/\r?\n/)
      .map((l) => (l.split('\u001b[1G').at(-1) as string).replace(/\u001b\[[0-9;?]*[A-Za-z]/g, ''))
      .filter((l) => l.includes('│') || l.includes('─'));
    expect(lines.length).toBeGreaterThan(6);
    for (const line of lines) expect(Array.from(line).length).toBeLessThanOrEqual(80);
    // Something had to give, but not a name (what --campaign takes): the creation time and the type went.
    for (const c of s.data.campaigns) expect(tty.screen()).toContain(` ${c.name} `);
    expect(tty.screen()).not.toContain('SESSION_COMPLETION');

    const piped = await cli(['campaigns', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(piped.code).toBe(0);
    const rows = piped.stdout.trimEnd().split('\n');
    expect(rows[0]).toBe('id\tname\tdisplay name\ttype\tcreated');
    expect(rows).toHaveLength(7);
    expect(piped.stdout).not.toMatch(/[│─┌└]/);
    for (const [i, c] of s.data.campaigns.entries()) {
      expect(rows[i + 1]?.split('\t')).toEqual([c.id, c.name, c.display_name, c.type, c.created_at]);
    }
  });

  it('the demo at 80 columns: one line a stream, every line of the table within the width', async () => {
    const dir = tempDir();
    const env: NodeJS.ProcessEnv = { ...process.env, CI: '' };
    for (const name of ['CAMPAIGN_SYNC_BASE_URL', 'CAMPAIGN_SYNC_API_KEY', 'CAMPAIGN_SYNC_DB']) delete env[name];
    const tty = ptyCli(['demo', '--db', join(dir, 'demo.db')], { env, cwd: dir, columns: 80 });
    expect(await tty.exited, tty.screen()).toBe(0);
    // As the screen shows it: the spinner's line rewritten from its first column (ESC [1G) by the table.
    const shown = (text: string) =>
      text.split(/\r?\n/).map((l) => (l.split('\u001b[1G').at(-1) as string).replace(/\u001b\[[0-9;?]*[A-Za-z]/g, ''));
    const table = shown(tty.screen()).filter((l) => /^[│┌└]/.test(l));
    // Six streams, a header and two borders, as at 84 columns, where blocks took 56 lines.
    expect(table).toHaveLength(9);
    for (const line of table) expect(Array.from(line).length).toBeLessThanOrEqual(80);
    expect(table[1]?.split('│').map((c) => c.trim())).toEqual(['', 'campaign', 'type', 'new', 'updated', 'status', '']);

    // status at 60 columns: a table still, with what says whether a stream is well (no stream failing: no error column).
    const status = ptyCli(['status', '--db', join(dir, 'demo.db')], { env, cwd: dir, columns: 60 });
    expect(await status.exited).toBe(0);
    const rows = shown(status.screen()).filter((l) => /^[│┌└]/.test(l));
    expect(rows).toHaveLength(9);
    for (const line of rows) expect(Array.from(line).length).toBeLessThanOrEqual(60);
    expect(rows[1]?.split('│').map((c) => c.trim())).toEqual(['', 'campaign', 'records', 'last success', '']);
  });
});
