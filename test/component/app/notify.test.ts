/**
 * `--notify <url>` on pull and watch: one JSON POST per stream state change (failing, stale,
 * recovered, unlisted), none on a pass that changes nothing; deliveries retried within the pass,
 * redirects not followed, and a webhook that is down never fails the sync. The webhook is a real
 * HTTP server on 127.0.0.1:0; a front server between the CLI and the simulator fails one campaign's
 * results (404 with a request_id) or leaves it out of the campaign list on demand.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamRow } from '../../../src/store/sqlite/checkpoints.js';
import { requestIdOf, stateChanges } from '../../../src/sync/alerts.js';
import { fakeClock } from '../../helpers/clock.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function listen(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void | Promise<void>): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => void handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Hook {
  url: string;
  posts: Array<{ path: string; body: Record<string, unknown>; raw: string; type: string | undefined }>;
  /** Statuses to answer, in order; 200 once used up. */
  answers: number[];
}

async function webhook(): Promise<Hook> {
  const hook: Hook = { url: '', posts: [], answers: [] };
  hook.url = `${await listen((req, body, res) => {
    hook.posts.push({ path: req.url ?? '', body: JSON.parse(body), raw: body, type: req.headers['content-type'] });
    const status = hook.answers.shift() ?? 200;
    if (status === 302) res.writeHead(302, { location: '/elsewhere' }).end();
    else res.writeHead(status).end();
  })}/hook?token=s3cret`;
  return hook;
}

/** The simulator behind a front server that can fail one campaign's results or hide it from the list. */
async function front(target: string) {
  const state = { fail: undefined as string | undefined, hide: undefined as string | undefined, requestId: randomUUID() };
  const url = await listen(async (req, _body, res) => {
    const path = req.url ?? '/';
    const query = new URL(path, 'http://x').searchParams;
    if (state.fail !== undefined && path.includes('/results') && query.get('campaign_id') === state.fail) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Campaign not found', status_code: 404, request_id: state.requestId } }));
      return;
    }
    const upstream = await request(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '' } });
    let text = await upstream.body.text();
    if (state.hide !== undefined && new URL(path, 'http://x').pathname === '/v1/campaigns') {
      const doc = JSON.parse(text) as { data: Array<{ id: string }> };
      doc.data = doc.data.filter((c) => c.id !== state.hide);
      text = JSON.stringify(doc);
    }
    res.writeHead(upstream.statusCode, { 'content-type': 'application/json' }).end(text);
  });
  return { url, state };
}

describe('--notify', () => {
  it('pull: one POST per state change, none when nothing changes; failing carries the error and request_id, recovered follows', async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const f = await front(s.url);
    const hook = await webhook();
    const dir = tempDir();
    const pull = () =>
      runCli(['pull', '--db', join(dir, 'm.db'), '--notify', hook.url, '--quiet'], {
        env: { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
      });
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toEqual([]);

    const failing = s.data.campaigns[0]?.id as string;
    f.state.fail = failing;
    const r = await pull();
    expect(r.code, r.stderr).toBe(4);
    expect(hook.posts).toHaveLength(1);
    const post = hook.posts[0] as Hook['posts'][number];
    expect(post.path).toBe('/hook?token=s3cret');
    expect(post.type).toBe('application/json');
    expect(post.body).toMatchObject({
      campaign_id: failing,
      state: 'failing',
      previous_state: 'ok',
      request_id: f.state.requestId,
      counts: { stored: 10, new: 0 },
    });
    expect(post.body.error).toMatch(/404/);
    expect(post.raw).not.toContain(s.apiKey);

    // Still failing: nothing new.
    expect((await pull()).code).toBe(4);
    expect(hook.posts).toHaveLength(1);

    f.state.fail = undefined;
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(2);
    expect(hook.posts[1]?.body).toMatchObject({ campaign_id: failing, state: 'recovered', previous_state: 'failing', error: null });
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(2);

    // A campaign the service stops listing.
    f.state.hide = failing;
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(3);
    expect(hook.posts[2]?.body).toMatchObject({ campaign_id: failing, state: 'unlisted' });
  });

  it('a delivery that fails is retried within the pass; one that keeps failing never fails the sync and is sent again next pass', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const f = await front(s.url);
    const hook = await webhook();
    const dir = tempDir();
    // Each run on a fake clock: the backoff's waits are recorded, not waited out.
    let clock = fakeClock(Date.now());
    const pull = () => {
      clock = fakeClock(Date.now());
      return runCli(['pull', '--db', join(dir, 'm.db'), '--notify', hook.url, '--quiet'], {
        env: { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
        clock,
      });
    };
    expect((await pull()).code).toBe(0);
    expect(clock.sleeps).toEqual([]);
    f.state.fail = s.data.campaigns[1]?.id as string;
    // Two 503s, then 200: delivered in this pass, after two retries, 0.5 s then 1 s later.
    hook.answers = [503, 503];
    expect((await pull()).code).toBe(4);
    expect(hook.posts.map((p) => p.body.state)).toEqual(['failing', 'failing', 'failing']);
    expect(clock.sleeps).toEqual([500, 1000]);

    f.state.fail = undefined;
    hook.posts.length = 0;
    hook.answers = [500, 500, 500, 500];
    const down = await pull();
    expect(down.code, down.stderr).toBe(0);
    expect(hook.posts).toHaveLength(4);
    // Three retries, the backoff doubled at each: 3.5 s of the run's clock, none of the test's.
    expect(clock.sleeps).toEqual([500, 1000, 2000]);
    expect(down.stderr).toMatch(
      /--notify: could not tell http:\/\/127\.0\.0\.1:\d+ that stream .* is recovered \(HTTP 500\); it is sent again at the next pass/,
    );
    // The URL's token is never printed.
    expect(down.stderr).not.toContain('s3cret');
    const again = await pull();
    expect(again.code).toBe(0);
    expect(hook.posts).toHaveLength(5);
    expect(hook.posts[4]?.body.state).toBe('recovered');

    // A redirect is not followed, and not retried.
    f.state.fail = s.data.campaigns[1]?.id as string;
    hook.answers = [302];
    const moved = await pull();
    expect(moved.code).toBe(4);
    expect(hook.posts.map((p) => p.path)).not.toContain('/elsewhere');
    expect(hook.posts).toHaveLength(6);
    expect(moved.stderr).toMatch(/HTTP 302, a redirect, not followed/);
  });

  it('watch: the change is told once across passes', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const f = await front(s.url);
    f.state.fail = s.data.campaigns[0]?.id as string;
    const hook = await webhook();
    const dir = tempDir();
    const r = await runCli(
      ['watch', '--db', join(dir, 'm.db'), '--notify', hook.url, '--interval', '1h', '--max-cycles', '3', '--quiet'],
      // The hours between the passes are the run's clock's, which waits for nothing.
      { env: { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey }, clock: fakeClock(Date.now()) },
    );
    expect(r.code, r.stderr).toBe(4);
    expect(hook.posts.map((p) => [p.body.campaign_id, p.body.state])).toEqual([[f.state.fail, 'failing']]);
  });

  it('plain http to a host other than loopback is refused unless --allow-insecure-http; a bad URL is exit 2', async () => {
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' };
    const r = await runCli(['pull', '--db', join(dir, 'm.db'), '--notify', 'http://hooks.example.com/x?token=s3cret'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--notify: plain http:\/\/ to hooks\.example\.com would send the alerts unencrypted/);
    expect(r.stderr).not.toContain('s3cret');
    for (const bad of ['not a url', 'ftp://x/y', 'https://user:pw@hooks.example.com/']) {
      const b = await runCli(['pull', '--db', join(dir, 'm.db'), '--notify', bad], { env });
      expect(b.code, bad).toBe(2);
      expect(b.stderr).toMatch(/^campaign-sync: --notify: /);
    }
  });
});

describe('state changes (pure)', () => {
  const row = (over: Partial<StreamRow>): StreamRow => ({
    stream: 'c1:session',
    campaign_id: 'c1',
    endpoint: 'session',
    report_type: null,
    cursor: null,
    records: 0n,
    last_success_at: '2026-01-01T00:00:00.000Z',
    last_error: null,
    last_error_at: null,
    unlisted_since: null,
    type_changed_to: null,
    id_conflicts: 0,
    ...over,
  });
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');

  it('a stream retired by a change of its campaign type is unlisted, never stale', () => {
    const retired = row({ type_changed_to: 'ROLE_SUBMISSION' });
    const changes = stateChanges([retired], new Map(), t0 + 601_000, 600_000);
    expect(changes.map((c) => [c.state, c.previous, c.record])).toEqual([['unlisted', 'ok', 'unlisted']]);
  });

  it('stale after max-age, recovered after a success; nothing for a healthy stream with no state delivered', () => {
    expect(stateChanges([row({})], new Map(), t0 + 60_000, 600_000)).toEqual([]);
    const stale = stateChanges([row({})], new Map(), t0 + 601_000, 600_000);
    expect(stale.map((c) => [c.state, c.previous, c.record])).toEqual([['stale', 'ok', 'stale']]);
    const back = stateChanges(
      [row({ last_success_at: '2026-01-01T00:10:00.000Z' })],
      new Map([['c1:session', 'stale']]),
      t0 + 601_000,
      600_000,
    );
    expect(back.map((c) => [c.state, c.previous, c.record])).toEqual([['recovered', 'stale', 'ok']]);
    // Stale, then failing: a change; failing wins over stale.
    const worse = stateChanges([row({ last_error: 'x' })], new Map([['c1:session', 'stale']]), t0 + 601_000, 600_000);
    expect(worse.map((c) => c.state)).toEqual(['failing']);
  });

  it('request_id is read from the stored error', () => {
    expect(requestIdOf('GET /v1/x: 500 boom [request_id 0b6f2a8e-1c3d]')).toBe('0b6f2a8e-1c3d');
    expect(requestIdOf('no id')).toBeNull();
    expect(requestIdOf(null)).toBeNull();
  });
});
