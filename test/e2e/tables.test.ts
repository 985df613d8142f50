/**
 * Tables suit where they go (issue 14): on a terminal, boxed and cut to its width; in a pipe,
 * tab-separated values with a header row and no box drawing.
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
    const lines = tty
      .screen()
      .split(/\r?\n/)
      .filter((l) => l.includes('│') || l.includes('─'));
    expect(lines.length).toBeGreaterThan(6);
    for (const line of lines) expect(Array.from(line).length).toBeLessThanOrEqual(80);
    // Something had to give: the widest cells are cut with an ellipsis.
    expect(tty.screen()).toContain('…');

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
});
