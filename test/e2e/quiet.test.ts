/**
 * `--quiet` keeps cron mail to errors, so every failure must still reach stderr: one line per failed
 * stream (campaign, endpoint, the error) and one per failed watch pass.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, sim, tempDir } from '../helpers/index.js';

/**
 * The simulator answers the first `allowed` requests, then 429 for the next 50 minutes: with one
 * stream at a time and no retries, the first streams sync and the rest fail.
 */
async function budgetOf(allowed: number) {
  const s = await sim({ campaigns: 2, records: 5, rateLimit: { count: allowed, windowMs: 3_000_000 } });
  const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
  const names = s.data.campaigns.map((c) => c.name);
  return { s, env, names };
}

const FAILED_STREAM =
  /^error: (\S+) \((session|role DETAILED)\): 429 Too many requests.* — GET \/v1\/campaigns\/(session|role)\/results \(campaign [0-9a-f-]+\)/;
const args = (db: string, ...more: string[]) => ['pull', '--db', db, '--concurrency', '1', '--max-retries', '0', ...more];

describe('pull --quiet', () => {
  it('one stream failed (exit 4): one line on stderr naming campaign, endpoint and error; nothing on stdout', async () => {
    const { env, names } = await budgetOf(2);
    const r = await cli(args(join(tempDir(), 'm.db'), '--quiet'), { env });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const m = FAILED_STREAM.exec(lines[0] as string);
    expect(m, r.stderr).not.toBeNull();
    expect(names).toContain(m?.[1]);
  });

  it('every stream failed (exit 5): one line each', async () => {
    const { env } = await budgetOf(1);
    const r = await cli(args(join(tempDir(), 'm.db'), '--quiet'), { env });
    expect(r.code).toBe(5);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(FAILED_STREAM);
  });

  it('without --quiet the failure is in the table once, not repeated on stderr; with --json it goes to stderr too', async () => {
    const plain = await budgetOf(2);
    const r = await cli(args(join(tempDir(), 'm.db')), { env: plain.env });
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/^ {2}failed: \S+ \((session|role DETAILED)\): 429 Too many requests.* — GET /m);
    expect(r.stderr).not.toMatch(/error:/);

    const json = await budgetOf(2);
    const j = await cli(args(join(tempDir(), 'm.db'), '--json'), { env: json.env });
    expect(j.code).toBe(4);
    expect(JSON.parse(j.stdout).streams.filter((x: { status: string }) => x.status === 'failed')).toHaveLength(1);
    expect(j.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(FAILED_STREAM)]);
  });
});

describe('watch --quiet', () => {
  it('prints each failed stream of a pass and each failed pass, and nothing else', async () => {
    const { env } = await budgetOf(2);
    const r = await cli(
      [
        'watch',
        '--db',
        join(tempDir(), 'm.db'),
        '--concurrency',
        '1',
        '--max-retries',
        '0',
        '--interval',
        '200ms',
        '--max-cycles',
        '2',
        '--quiet',
      ],
      { env },
    );
    // Pass 1: the list and one stream fit the budget, the other stream fails; pass 2: the list fails.
    expect(r.code).toBe(5);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^error: 20\d\d-\S+ pass 1: \S+ \((session|role DETAILED)\): 429 Too many requests.* — GET \/v1\/campaigns\/(session|role)\/results /,
    );
    expect(lines[1]).toMatch(/^error: 20\d\d-\S+ pass 2 failed: nothing synced: 429 Too many requests.* — GET \/v1\/campaigns/);
  });
});
