/**
 * `export --campaign` of a campaign whose rows are in another table (a role campaign's session
 * results) writes a header only, exit 0: a warning says why, so the empty file does not pass for "no
 * results yet".
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseStrictCsv } from '../helpers/csv.js';
import { tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';
import { sharedSim } from '../helpers/shared-sim.js';

describe('export --campaign that selects no rows', () => {
  it('says which table holds the campaign, or that the dates leave nothing; a campaign with rows says nothing', async () => {
    const s = await sharedSim({ campaigns: 2, records: 5 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const role = s.data.campaigns.find((c) => c.type === 'ROLE_SUBMISSION');
    const session = s.data.campaigns.find((c) => c.type === 'SESSION_COMPLETION');
    const out = join(dir, 'e.csv');

    const other = await runCli(['export', '--db', db, '--table', 'session-results', '--campaign', String(role?.name), '-o', out]);
    expect(other.code, other.stderr).toBe(0);
    expect(parseStrictCsv(readFileSync(out, 'utf8'))).toHaveLength(1);
    expect(other.stderr).toContain(
      `warning: --campaign "${role?.name}": no rows in --table session-results: it is a role campaign, whose results are in --table role-results`,
    );

    const dated = await runCli([
      'export',
      '--db',
      db,
      '--table',
      'session-results',
      '--campaign',
      String(session?.name),
      '--since',
      '2999-01-01',
    ]);
    expect(dated.code, dated.stderr).toBe(0);
    expect(dated.stderr).toContain(`--campaign "${session?.name}": no rows in --table session-results in the dates given`);

    const own = await runCli(['export', '--db', db, '--table', 'session-results', '--campaign', String(session?.name), '-o', out]);
    expect(own.code).toBe(0);
    expect(own.stderr).not.toContain('warning');
    expect(parseStrictCsv(readFileSync(out, 'utf8'))).toHaveLength(6);

    // --quiet: only errors.
    const quiet = await runCli([
      'export',
      '--db',
      db,
      '--table',
      'role-results',
      '--campaign',
      String(session?.name),
      '-o',
      out,
      '--quiet',
    ]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });
});
