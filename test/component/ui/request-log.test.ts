/**
 * --verbose: one line per HTTP attempt with status, time, bytes, attempt n of m, budget
 * wait and the request_id of an error body; a line per retry; JSON lines with --json; never the key.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandEvents } from '../../../src/ui/events.js';
import { Output } from '../../../src/ui/output.js';
import { sim, tempDir } from '../../helpers/index.js';
import { CAMPAIGN, campaignList, mockClient, mockService } from '../../helpers/mock.js';
import { runCli } from '../../helpers/run-cli.js';

const KEY = 'secret-test-key';

function capture(flags: { json?: boolean; quiet?: boolean; verbose?: boolean }) {
  const err: string[] = [];
  const out: string[] = [];
  const streams = { stdout: { write: (t: string) => out.push(t) > 0 }, stderr: { write: (t: string) => err.push(t) > 0 } } as never;
  return { output: new Output(flags, streams, {}), stderr: () => err.join(''), all: () => out.join('') + err.join('') };
}

const BODY_503 = JSON.stringify({ error: { message: 'busy', status_code: 503, request_id: 'req-503' } });
const BODY_404 = JSON.stringify({ error: { message: 'no such campaign', status_code: 404, request_id: 'req-404-abc' } });

/** A 200, then a 503 retried into a 200, then a 404 with its request_id. */
function service() {
  let results = 0;
  return mockService((url) => {
    if (url.pathname === '/v1/campaigns') return { body: campaignList({ id: CAMPAIGN, type: 'SESSION_COMPLETION' }) };
    results++;
    if (results === 1) return { status: 503, body: BODY_503 };
    if (results === 2) return { body: { data: [], has_more: false } };
    return { status: 404, body: BODY_404 };
  });
}

async function exercise(flags: { json?: boolean; quiet?: boolean }) {
  const { agent } = service();
  const c = capture({ ...flags, verbose: true });
  const client = mockClient(agent, { apiKey: KEY }, { events: commandEvents(c.output) });
  await client.listCampaigns();
  await client.resultsPage({ endpoint: 'session', campaignId: CAMPAIGN, limit: 100 });
  await expect(client.resultsPage({ endpoint: 'session', campaignId: CAMPAIGN, limit: 100 })).rejects.toThrow(/404/);
  await client.close();
  return { c, requests: client.requests };
}

describe('the request log', () => {
  it('a 200, a retried 503 and a 404 with its request_id, one line each with the bytes of its body, and the retry on its own line', async () => {
    const { c, requests } = await exercise({});
    const lines = c.stderr().trimEnd().split('\n');
    const http = lines.filter((l) => l.startsWith('http '));
    expect(http).toHaveLength(requests);
    expect(http[0]).toMatch(/^http GET \/v1\/campaigns 200 \d+ ms \d+ B attempt 1\/4 budget-wait 0 ms$/);
    expect(http[1]).toMatch(
      /^http GET \/v1\/campaigns\/session\/results\?campaign_id=1111.*&sort=asc&limit=100 503 \d+ ms (\d+) B attempt 1\/4 budget-wait 0 ms request_id req-503$/,
    );
    // An error's body was read (its message and request_id come from it): its size, not 0 B.
    expect(http[1]).toContain(` ${Buffer.byteLength(BODY_503)} B `);
    expect(lines[2]).toMatch(/^retry: 503, waiting \d+ ms \(backoff\), then attempt 2\/4 of GET \/v1\/campaigns\/session\/results$/);
    expect(http[2]).toMatch(/ 200 .* attempt 2\/4 /);
    expect(http[3]).toMatch(/ 404 .* attempt 1\/4 budget-wait 0 ms request_id req-404-abc$/);
    expect(http[3]).toContain(` ${Buffer.byteLength(BODY_404)} B `);
    expect(c.all()).not.toContain(KEY);
    expect(c.all()).not.toContain(KEY.slice(0, 6));
  });

  it('JSON objects, one per line, on stderr with --json; printed with --quiet too', async () => {
    const { c, requests } = await exercise({ json: true, quiet: true });
    const docs = c
      .stderr()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(docs.filter((d) => d.event === 'request')).toHaveLength(requests);
    expect(docs.find((d) => d.status === 404)).toMatchObject({
      request_id: 'req-404-abc',
      attempt: 1,
      max_attempts: 4,
      bytes: Buffer.byteLength(BODY_404),
      body_not_read: false,
    });
    expect(docs.find((d) => d.event === 'retry')).toMatchObject({ status: 503, next_attempt: 2, retry_after: false });
    expect(c.all()).not.toContain(KEY.slice(0, 6));
  });

  it('a 429 is a rate-limit line with its Retry-After', async () => {
    let n = 0;
    const { agent } = mockService(() =>
      ++n === 1
        ? { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'slow down', request_id: 'rl' } } }
        : { body: campaignList() },
    );
    const c = capture({ verbose: true });
    const client = mockClient(agent, {}, { events: commandEvents(c.output) });
    await client.listCampaigns();
    await client.close();
    expect(c.stderr()).toMatch(/^rate-limit: 429, every stream paused 0 ms \(Retry-After\), then attempt 2\/4 of GET \/v1\/campaigns$/m);
  });

  it('a body cut off at the cap: the bytes that were read, and why it stopped', async () => {
    const big = JSON.stringify({ data: [], filler: 'x'.repeat(500) });
    const { agent } = mockService(() => ({ body: big }));
    const c = capture({ verbose: true });
    const client = mockClient(agent, { maxRetries: 0 }, { events: commandEvents(c.output), maxBodyBytes: 100 });
    await expect(client.listCampaigns()).rejects.toThrow(/over the 100-byte cap/);
    await client.close();
    expect(c.stderr()).toMatch(new RegExp(` ${Buffer.byteLength(big)} B attempt 1/1 .*over the 100-byte cap`));
  });

  it('a body refused at its headers (Content-Length over the cap) says it was not read, not 0 B', async () => {
    const big = JSON.stringify({ data: [], filler: 'x'.repeat(500) });
    const { agent } = mockService(() => ({ body: big, headers: { 'content-length': String(Buffer.byteLength(big)) } }));
    for (const json of [false, true]) {
      const c = capture({ verbose: true, json });
      const client = mockClient(agent, { maxRetries: 0 }, { events: commandEvents(c.output), maxBodyBytes: 100 });
      await expect(client.listCampaigns()).rejects.toThrow(/response body of 523 bytes is over the 100-byte cap/);
      await client.close();
      if (json) expect(JSON.parse(c.stderr())).toMatchObject({ event: 'request', bytes: 0, body_not_read: true });
      else
        expect(c.stderr()).toMatch(
          /^http GET \/v1\/campaigns 200 \d+ ms body not read attempt 1\/1 .*of 523 bytes is over the 100-byte cap$/m,
        );
    }
  });

  it('no lines without --verbose', async () => {
    const { agent } = mockService(() => ({ body: campaignList() }));
    const c = capture({});
    const client = mockClient(agent, {}, { events: commandEvents(c.output) });
    await client.listCampaigns();
    await client.close();
    expect(c.stderr()).toBe('');
  });

  it('pull -v: as many request lines as the summary counts requests', async () => {
    const s = await sim({ campaigns: 3, records: 120, apiKey: 'ops2-very-secret-key' });
    const db = join(tempDir(), 'm.db');
    const keyFile = join(tempDir(), 'key');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(keyFile, s.apiKey, { mode: 0o600 });
    const r = await runCli(['pull', '-v', '--json', '--base-url', s.url, '--api-key-file', keyFile, '--db', db, '--page-size', '50']);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout) as { requests: number };
    const logged = r.stderr
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string })
      .filter((d) => d.event === 'request');
    expect(summary.requests).toBeGreaterThan(5);
    expect(logged).toHaveLength(summary.requests);
    expect(r.stdout + r.stderr).not.toContain('ops2-very');
  });
});
