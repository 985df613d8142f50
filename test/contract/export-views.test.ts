/** `export --table results|latest_results|skill_scores` and `--columns` from a PostgreSQL team mirror. */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parseStrictCsv } from '../helpers/csv.js';
import { tempDir } from '../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../helpers/pg.js';
import { runCli } from '../helpers/run-cli.js';
import { sharedSim } from '../helpers/shared-sim.js';

describePg('export of the views and --columns from PostgreSQL', () => {
  it('every row of each view; only the columns asked for, in their order', async () => {
    const s = await sharedSim({ campaigns: 2, records: 20 });
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const dir = tempDir();
    for (const view of ['results', 'latest_results', 'skill_scores']) {
      const out = join(dir, `${view}.csv`);
      const r = await runCli(['export', ...db, '--table', view, '-o', out]);
      expect(r.code, r.stderr).toBe(0);
      const [, ...rows] = parseStrictCsv(readFileSync(out, 'utf8'));
      const count = await pgRows(schema, `SELECT count(*)::int AS n FROM ${view}`);
      expect(rows.length, view).toBe(count[0]?.n);
      expect(rows.length, view).toBeGreaterThan(0);
    }
    const out = join(dir, 'cols.ndjson');
    const r = await runCli([
      'export',
      ...db,
      '--table',
      'role-results',
      '--format',
      'ndjson',
      '--columns',
      'user_email,id,order_index',
      '-o',
      out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(Object.keys(JSON.parse(lines[0] as string))).toEqual(['user_email', 'id', 'order_index']);
    const bad = await runCli(['export', ...db, '--table', 'skill_scores', '--columns', 'skill_key,nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/skill_scores has no column "nope"/);
  });

  it('a symbolic link at -o is refused (exit 2) as from SQLite, and what it points at is untouched', async () => {
    const schema = freshSchema();
    const db = ['--db', PG_URL, '--pg-schema', schema];
    const s = await sharedSim({ campaigns: 1, records: 2 });
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const dir = tempDir();
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep me');
    const out = join(dir, 'out.csv');
    symlinkSync(victim, out);
    const r = await runCli(['export', ...db, '--table', 'campaigns', '-o', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${out} is a symbolic link; campaign-sync does not follow links to its own files`);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
  });
});
