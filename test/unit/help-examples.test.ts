/**
 * A command's examples in its help fit the terminal's width as shell lines: broken between words
 * with ` \` (pasted, still one command), a quoted word never split, a comment that does not fit put
 * above its command (a backslash does not carry a comment on: the words after it would run).
 */
import { describe, expect, it } from 'vitest';
import { shellLines } from '../../src/cli.js';

describe('help examples at a width', () => {
  it('fit as they are when they can', () => {
    expect(shellLines('campaign-sync pull --since 2026-01-01', 80)).toBe('  $ campaign-sync pull --since 2026-01-01');
  });

  it('break between words with a backslash, every line within the width, a quoted part whole', () => {
    const line = 'campaign-sync export --table latest_results --columns campaign_name,candidate_email,score -o "my latest.csv"';
    const shown = shellLines(line, 60);
    const lines = shown.split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(60);
    for (const l of lines.slice(0, -1)) expect(l.endsWith(' \\')).toBe(true);
    expect(shown).toContain('"my latest.csv"');
    // Read back as a shell would: the same words.
    expect(shown.replace(/ \\\n\s+/g, ' ').replace(/^\s+\$ /, '')).toBe(line);
  });

  it('puts a comment that does not fit on a line of its own above the command', () => {
    const shown = shellLines('campaign-sync pull --quiet --if-idle # from cron: a tick during a long pull stays silent', 60);
    expect(shown).toBe('  # from cron: a tick during a long pull stays silent\n  $ campaign-sync pull --quiet --if-idle');
    expect(shellLines('campaign-sync pull --quiet # quiet', 80)).toBe('  $ campaign-sync pull --quiet # quiet');
  });
});
