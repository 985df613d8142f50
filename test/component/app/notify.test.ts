/**
 * `--notify <url>` on pull and watch beyond the contract's case (test/contract/notify.test.ts: one
 * JSON POST per stream state change, none on a pass that changes nothing, the state delivered kept
 * in each kind of mirror): deliveries retried within the pass, redirects not followed, a webhook
 * that is down never failing the sync, watch, the URL's checks, and the state changes themselves.
 * The webhook and the front server before the simulator are test/helpers/webhook.ts's.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alertDocument } from '../../../src/app/notify.js';
import type { StreamRow } from '../../../src/store/sqlite/checkpoints.js';
import { requestIdOf, stateChanges } from '../../../src/sync/alerts.js';
import { fakeClock } from '../../helpers/clock.js';
import { sim, tempDir } from '../../helpers/index.js';
import { streamRow } from '../../helpers/records.js';
import { runCli } from '../../helpers/run-cli.js';
import { front, webhook } from '../../helpers/webhook.js';

describe('--notify', () => {
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
  const row = (over: Partial<StreamRow>): StreamRow =>
    streamRow({ stream: 'c1:session', last_success_at: '2026-01-01T00:00:00.000Z', ...over });
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');

  it('a stream retired by a change of its campaign type is unlisted, never stale', () => {
    const retired = row({ type_changed_to: 'ROLE_SUBMISSION' });
    const changes = stateChanges([retired], new Map(), t0 + 601_000, 600_000);
    expect(changes.map((c) => [c.state, c.previous, c.record])).toEqual([['unlisted', 'ok', 'unlisted']]);
  });

  it("a stream failing from its first pass was never ok: its first alert's previous_state is null", () => {
    const [first] = stateChanges([row({ last_success_at: null, last_error: '500 x' })], new Map(), t0, 600_000);
    expect(first?.first).toBe(true);
    expect(alertDocument(first as NonNullable<typeof first>, new Map(), undefined, '2026-01-01T00:00:00.000Z').previous_state).toBeNull();
    // One that succeeded before, told of nothing yet: it was ok.
    const [later] = stateChanges([row({ last_error: '500 x' })], new Map(), t0, 600_000);
    expect(alertDocument(later as NonNullable<typeof later>, new Map(), undefined, '2026-01-01T00:00:00.000Z').previous_state).toBe('ok');
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
