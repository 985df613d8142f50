/**
 * Failures visible everywhere: with --json a fatal error (401, the service down) is still
 * one JSON document on stdout with the error and exit code; watch --quiet still logs each failed
 * stream of each pass.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fakeClock } from '../helpers/clock.js';
import { sim, tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';

describe('--json on fatal errors', () => {
  it('401: one JSON document with the error and exit code 3, and never the key', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const r = await runCli(['pull', '--json', '--base-url', s.url, '--db', `${tempDir()}/m.db`], {
      env: { CAMPAIGN_SYNC_API_KEY: 'ops2-wrong-key-123' },
    });
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout) as { error: string; exit_code: number };
    expect(doc.exit_code).toBe(3);
    expect(doc.error).toMatch(/401/);
    expect(r.stdout + r.stderr).not.toContain('ops2-wrong');
  });

  it('the service down: exit 5, one JSON document with the requests made, as many as the request log has', async () => {
    const r = await runCli(
      [
        'pull',
        '--json',
        '-v',
        '--max-retries',
        '2',
        '--base-url',
        'http://127.0.0.1:9',
        '--db',
        `${tempDir()}/m.db`,
        '--rate-limit',
        '100/1s',
      ],
      { env: { CAMPAIGN_SYNC_API_KEY: 'k', XDG_STATE_HOME: tempDir() } },
    );
    expect(r.code).toBe(5);
    const logged = r.stderr.split('\n').filter((l) => l.startsWith('{') && JSON.parse(l).event === 'request');
    expect(logged).toHaveLength(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ exit_code: 5, requests: 3 });
  });

  it.each([
    [['pull', '--json', '--bogus'], "unknown option '--bogus'"],
    [['export', '--json', '--table', 'nope'], "option '--table <table>' argument 'nope' is invalid. must be one of campaigns, "],
    [['status', '--json', 'x'], "too many arguments for 'status'. Expected 0 arguments but got 1."],
    [['status', '--json', '--max-age'], "option '--max-age <duration>' argument missing"],
  ])('a usage error found by commander (%j): exit 2, its one line on stderr and the same words in a JSON document', async (args, words) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout) as { error: string; exit_code: number };
    expect(doc).toEqual({ error: expect.stringContaining(words), exit_code: 2 });
    expect(doc.error).toMatch(/ \(add --help for usage\)$/);
    expect(r.stderr).toBe(`campaign-sync: ${doc.error}\n`);
  });

  it('without --json a usage error leaves stdout empty', async () => {
    const r = await runCli(['pull', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("campaign-sync: unknown option '--bogus' (add --help for usage)\n");
  });

  it('watch --quiet: one error line per failed stream per pass', async () => {
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/v1/campaigns?') || req.url === '/v1/campaigns') {
        res.end(JSON.stringify({ data: [{ id: '11111111-1111-4111-8111-111111111111', name: 'gone', type: 'SESSION_COMPLETION' }] }));
        return;
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { message: 'no such campaign', status_code: 404, request_id: 'req-gone-1' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await runCli(
        ['watch', '--quiet', '--max-cycles', '2', '--interval', '1h', '--base-url', url, '--db', `${tempDir()}/m.db`],
        // The hour between the passes is the run's clock's, which waits for nothing.
        { env: { CAMPAIGN_SYNC_API_KEY: 'k' }, clock: fakeClock(Date.now()) },
      );
      expect(r.code).toBe(4);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^error: \S+Z pass 1: gone \(session\): 404 no such campaign — GET .* \[request_id req-gone-1\]$/);
      expect(lines[1]).toMatch(/^error: \S+Z pass 2: gone \(session\): /);
    } finally {
      server.close();
    }
  });
});
