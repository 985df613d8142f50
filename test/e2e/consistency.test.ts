/**
 * What a new user trips over: enum values in any case, SQL table names, export's
 * --campaign by id or name, export --json, one error style, and messages that say what is wrong.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDate, parseRate } from '../../src/config/duration.js';
import { cli, sim, startCli, tempDir } from '../helpers/index.js';

describe('consistency', () => {
  it('enums in any case, SQL table names, --campaign by name, export --json', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const pull = await cli(['pull', '--db', db, '--report-type', 'overall', '--type', 'ROLE', '--json'], { env });
    expect(pull.code, pull.stderr).toBe(0);
    expect(JSON.parse(pull.stdout).streams.map((x: { report_type: string }) => x.report_type)).toEqual(['OVERALL']);

    const session = s.data.campaigns[0]!;
    const file = join(dir, 'x.csv');
    const exp = await cli(['export', '--db', db, '--table', 'role_results', '--format', 'CSV', '-o', file, '--json']);
    expect(exp.code, exp.stderr).toBe(0);
    expect(JSON.parse(exp.stdout)).toEqual({ table: 'role-results', format: 'csv', rows: 5, path: file });
    expect(readFileSync(file, 'utf8').split('\r\n')[0]).toMatch(/^id,campaign_id/);

    await cli(['pull', '--db', db], { env });
    const byName = await cli(['export', '--db', db, '--table', 'session-results', '--campaign', session.name]);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout.trim().split('\r\n')).toHaveLength(6);
    const none = await cli(['export', '--db', db, '--table', 'session-results', '--campaign', 'no-such-campaign']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--campaign: no campaign with the id, name or id prefix "no-such-campaign"/);
    expect(none.stdout).toBe('');
    const jsonToStdout = await cli(['export', '--db', db, '--table', 'campaigns', '--json']);
    expect(jsonToStdout.code).toBe(2);
  });

  it("the campaigns --help's examples name are the demo's, so an example pasted after `demo` runs", async () => {
    // The demo's service: the simulator with its defaults (seed 1, six campaigns).
    const s = await sim({});
    const names = new Set(s.data.campaigns.flatMap((c) => [c.name, c.id]));
    const named: string[] = [];
    for (const command of ['pull', 'reconcile', 'export', 'status', 'reset', 'watch']) {
      const help = await cli([command, '--help']);
      for (const m of help.stdout.matchAll(/^ +\$ .*--campaign (\S+)/gm)) named.push(m[1] as string);
    }
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) expect(names, name).toContain(name);
  });

  it('one error style, and messages that name the real problem', async () => {
    const unknown = await cli(['pull', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("campaign-sync: unknown option '--bogus' (add --help for usage)\n");
    const badChoice = await cli(['export', '--table', 'nope']);
    expect(badChoice.stderr.trim().split('\n')).toHaveLength(1);
    expect(badChoice.stderr).toMatch(/must be one of campaigns, session-results/);

    expect(parseRate('100/minute', '--rate-limit')).toEqual({ count: 100, windowMs: 60_000 });
    expect(parseRate('5/sec', '--rate-limit')).toEqual({ count: 5, windowMs: 1000 });
    expect(parseRate('20/2s', '--rate-limit')).toEqual({ count: 20, windowMs: 2000 });
    expect(() => parseRate('100/fortnight', '--rate-limit')).toThrow(
      '--rate-limit: "100/fortnight" is not a rate (examples: 100, 100/1m, 100/minute, 20/2s)',
    );
    expect(() => parseDate('2026-02-30', '--since')).toThrow('--since: "2026-02-30" is not a day of the calendar (2026-02 has 28 days)');
    expect(() => parseDate('2026-13-01', '--since')).toThrow('has no month 13');
    expect(() => parseDate('30/02/2026', '--since')).toThrow('is not a date in the form YYYY-MM-DD');

    // A key but no base URL: the user has a real service in mind; the demo is no answer.
    const noUrl = await cli(['pull'], { env: { CAMPAIGN_SYNC_API_KEY: 'k' } });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/missing --base-url or CAMPAIGN_SYNC_BASE_URL\n$/);
    const nothing = await cli(['pull']);
    expect(nothing.stderr).toMatch(/try `campaign-sync demo`/);
  });

  it("the simulator's printed hints work when pasted, also when it listens on every address", async () => {
    const run = startCli(['simulate', '--port', '0', '--host', '0.0.0.0', '--records', '3', '--campaigns', '2']);
    try {
      await run.waitFor(/or: {2}CAMPAIGN_SYNC_API_KEY=\S+ \S+ pull --base-url http:\/\/127\.0\.0\.1:\d+/);
      const [, key, url] = /or: {2}CAMPAIGN_SYNC_API_KEY=(\S+) \S+ pull --base-url (\S+)/.exec(run.stderr()) as RegExpExecArray;
      const pasted = await cli(['pull', '--base-url', url as string, '--db', join(tempDir(), 'p.db'), '--json'], {
        env: { CAMPAIGN_SYNC_API_KEY: key },
      });
      expect(pasted.code, pasted.stderr).toBe(0);
      expect(JSON.parse(pasted.stdout).records).toBe(6);
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
  });

  it('simulate --json prints where it listens, for scripts; every command but completion has --json', async () => {
    const run = startCli(['simulate', '--port', '0', '--records', '4', '--campaigns', '2', '--json']);
    try {
      await run.waitFor(/"url":/);
      const info = JSON.parse(run.stdout().split('\n')[0] as string);
      expect(info).toMatchObject({ port: expect.any(Number), api_key: 'demo-key', campaigns: 2, records: 4, rate_limit: '100/1m' });
      expect(run.stderr()).toBe('');
      const pulled = await cli(['pull', '--base-url', info.url, '--db', join(tempDir(), 's.db'), '--json'], {
        env: { CAMPAIGN_SYNC_API_KEY: info.api_key },
      });
      expect(JSON.parse(pulled.stdout).records).toBe(8);
    } finally {
      run.child.kill('SIGINT');
      await run.exited;
    }
    const { buildProgram } = await import('../../src/cli.js');
    const program = buildProgram(new AbortController().signal, { exitCode: 0 });
    for (const cmd of program.commands) {
      if (cmd.name() === 'completion') continue;
      expect(
        cmd.options.map((o) => o.long),
        cmd.name(),
      ).toContain('--json');
    }
  });
});
