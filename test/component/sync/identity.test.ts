/**
 * A record's campaign is part of its identity: the same result id served by two campaigns (a fault of
 * the service) stays with the campaign whose stream stored it first, the other copy is reported once
 * and counted in `status`, and nothing flips on a re-read (full, lookback, reconcile): the contract's
 * cases for every kind of mirror (test/contract/mirror.test.ts, DETAILED, and identity.test.ts,
 * OVERALL, with a campaign whose type changes), with SQLite's counts per stream in the status table
 * here, and a mirror written before conflicts were recorded.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

describe('status of a stream served ids another campaign holds', () => {
  it('counts them per stream, in the table and in --json', async () => {
    const s = await sim({ campaigns: 3, records: 20 });
    const [a, , b] = s.data.campaigns as [(typeof s.data.campaigns)[0], unknown, (typeof s.data.campaigns)[0]];
    s.changes.share(a, 2, b, 4);
    s.changes.share(a, 3, b, 8);
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const pull = await runCli(['pull', '--base-url', s.url, '--db', db, '--concurrency', '1'], { env });
    expect(pull.code, pull.stderr).toBe(0);
    expect(pull.stderr.match(/two campaigns/g)).toHaveLength(1);
    expect(pull.stderr).toContain(`campaign ${b.id} (stream ${b.id}/session) was served 2 results`);
    const again = await runCli(['pull', '--base-url', s.url, '--db', db, '--full'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('two campaigns');

    const json = await runCli(['status', '--db', db, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const streams = JSON.parse(json.stdout).streams as Array<{ campaign_id: string; id_conflicts: number; records: number }>;
    expect(streams.map((x) => [x.campaign_id, x.records, x.id_conflicts]).sort()).toEqual(
      [
        [a.id, 20, 0],
        [b.id, 20, 2],
        [s.data.campaigns[1]?.id, 20, 0],
      ].sort(),
    );
    const table = await runCli(['status', '--db', db]);
    const lines = table.stdout.trim().split('\n');
    const header = (lines[0] as string).split('\t');
    const column = header.indexOf('id conflicts');
    expect(column).toBeGreaterThan(0);
    const bLine = lines.find((l) => l.startsWith(`${b.name}\t`)) as string;
    expect(bLine.split('\t')[column]).toBe('2');
  });
});

describe('status of a mirror written before conflicts were recorded (schema 6)', () => {
  it('reads it as it is, with no conflicts', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const db = join(tempDir(), 'v6.db');
    const pull = await runCli(['pull', '--base-url', s.url, '--db', db], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(pull.code, pull.stderr).toBe(0);
    const m = openDatabase(db);
    m.exec('DROP TABLE id_conflicts; PRAGMA user_version = 6;');
    m.close();
    const status = await runCli(['status', '--db', db, '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).streams.map((x: { id_conflicts: number }) => x.id_conflicts)).toEqual([0]);
  });
});
