/**
 * A pull whose streams quarantine records across many pages: one warning per stream per pass,
 * naming the campaign and the fields at fault (not one per page naming the stream's key), and the
 * summary counts the quarantined records per stream and in all.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

describe('a pull that quarantines records on many pages', () => {
  it('warns once per stream, names the campaign, and counts the records per stream', async () => {
    // Every 10th record of 50 per campaign, pages of 10: five quarantined records on five pages of each stream.
    const s = await sim({ campaigns: 2, records: 50, malformed: { every: 10, kinds: ['id', 'score'] } });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const db = join(tempDir(), 'm.db');
    const r = await runCli(['pull', '--db', db, '--page-size', '10'], { env });
    expect(r.code, r.stderr).toBe(0);
    const warnings = r.stderr.trimEnd().split('\n');
    expect(warnings).toHaveLength(2);
    for (const c of s.data.campaigns) {
      const kind = c.type === 'SESSION_COMPLETION' ? 'session' : 'role DETAILED';
      const score = c.type === 'SESSION_COMPLETION' ? 'score' : 'overall_score';
      expect(warnings).toContain(
        `warning: ${c.name} (${kind}): 5 records failed the record rules and went to the quarantine (id: 3, ${score}: 2); the stream went on: \`campaign-sync quarantine list\` shows them`,
      );
    }
    expect(r.stderr).not.toMatch(/stream [0-9a-f-]{36}/);
    // In a pipe the summary is TSV: its quarantined column, then the totals line.
    const [head, ...rows] = r.stdout.split('\n');
    const column = head?.split('\t').indexOf('quarantined') as number;
    expect(column).toBeGreaterThan(0);
    expect(rows.slice(0, 2).map((row) => row.split('\t')[column])).toEqual(['5', '5']);
    expect(r.stdout).toMatch(/^90 records \(90 new, 0 updated\), 2 streams, .*, 10 quarantined \(`campaign-sync quarantine list`\)$/m);

    const json = await runCli(['pull', '--db', join(tempDir(), 'j.db'), '--page-size', '10', '--json'], { env });
    const doc = JSON.parse(json.stdout) as { streams: Array<{ quarantined: number; status: string }> };
    expect(doc.streams.map((x) => [x.status, x.quarantined])).toEqual([
      ['ok', 5],
      ['ok', 5],
    ]);
  });
});
