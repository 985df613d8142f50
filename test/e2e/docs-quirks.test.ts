/** `campaign-sync simulate --quirks …` as a user runs it: the documented shapes, then `pull` against them. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite/driver.js';
import { cli, startCli, tempDir } from '../helpers/index.js';

describe('simulate --quirks', () => {
  it('--quirks docs serves the documented shapes, and pull mirrors all of it', async () => {
    const server = startCli(['simulate', '--port', '0', '--quirks', 'docs', '--records', '30', '--campaigns', '6', '--rate-limit', 'off']);
    try {
      await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(server.stdout() + server.stderr())?.[1] as string;
      const db = join(tempDir(), 'docs.db');
      const env = { CAMPAIGN_SYNC_API_KEY: 'demo-key' };
      const r = await cli(['pull', '--base-url', url, '--db', db, '--page-size', '10', '--json'], { env });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const doc = JSON.parse(r.stdout) as { streams: Array<{ status: string; records: number; pages: number }>; records: number };
      // Six campaigns over two list pages; each stream 30 records in bare-array pages of 10: three full pages and an empty one.
      expect(doc.streams.length).toBe(6);
      expect(doc.streams.every((s) => s.status === 'ok' && s.records === 30 && s.pages === 4)).toBe(true);
      const sqlite = new Database(db, { readonly: true });
      const row = sqlite.prepare('SELECT user_email, scenario_type, score, raw FROM session_results LIMIT 1').get() as Record<
        string,
        unknown
      >;
      sqlite.close();
      expect(row.user_email).toMatch(/@/);
      expect(row.scenario_type).toMatch(/^[A-Z_]+$/);
      expect(typeof row.score).toBe('number');
      expect(JSON.parse(row.raw as string)).toHaveProperty('campaign_id');
      // A second pull finds nothing new.
      const again = await cli(['pull', '--base-url', url, '--db', db, '--page-size', '10', '--json'], { env });
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout).records).toBe(0);
    } finally {
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  });

  it('an unknown quirk is a usage error naming it (exit 2); so is an impossible combination', async () => {
    const bad = await cli(['simulate', '--port', '0', '--quirks', 'bare-array,nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--quirks: unknown quirk "nope" \(known: .*docs/);
    expect(bad.stderr.trim().split('\n').length).toBe(1);
    const both = await cli(['simulate', '--port', '0', '--quirks', 'docs,campaigns-bare-array']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/campaigns-bare-array cannot be combined with campaigns-paged/);
  });
});
