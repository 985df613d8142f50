/**
 * What a webhook receiver can trust of `--notify`: no personal data in a document, even when the
 * service's error quotes a candidate; each POST signed (HMAC-SHA256 of the exact body bytes) when a
 * secret is given; a `text` a chat webhook shows; `notify-test` to try the set-up; a POST that runs
 * out of time said in words.
 */
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Notifier } from '../../../src/app/notify.js';
import { front, webhook } from '../../helpers/front.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const EMAIL = 'Jane.Doe+test@Example.com';
const USER = 'u-48213';

/** A 0600 file holding `secret`. */
function secretFile(secret: string): string {
  const path = join(tempDir(), 'hook-secret');
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  return path;
}

const hmac = (secret: string, raw: Buffer) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

describe('--notify, for a receiver', () => {
  it("masks a candidate's e-mail and id quoted in the error, signs the exact body, and says it all in `text`", async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const f = await front(s.url);
    const hook = await webhook();
    const secret = 'whsec-0123456789abcdef';
    const dir = tempDir();
    const pull = () =>
      runCli(['pull', '--db', join(dir, 'm.db'), '--notify', hook.url, '--notify-secret-file', secretFile(secret), '--max-retries', '0'], {
        env: { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
      });
    expect((await pull()).code).toBe(0);
    const failing = s.data.campaigns[0] as { id: string; name: string };
    f.state.fail = {
      campaignId: failing.id,
      status: 500,
      message: `could not score ${EMAIL} (user_id ${USER}; email=${encodeURIComponent(EMAIL)})`,
      requestId: 'req-500-quoted',
    };
    const r = await pull();
    expect(r.code, r.stderr).toBe(4);
    // The local copy keeps the service's words (forget reaches it); the notification does not.
    expect(r.stdout).toContain(EMAIL);
    expect(hook.posts).toHaveLength(1);
    const post = hook.posts[0] as (typeof hook.posts)[number];
    const raw = post.raw.toString('utf8');
    expect(raw.toLowerCase()).not.toContain(EMAIL.toLowerCase());
    expect(raw.toLowerCase()).not.toContain('jane.doe');
    expect(raw).not.toContain(USER);
    expect(raw).not.toContain(secret);
    expect(post.body).toMatchObject({ type: 'campaign-sync.stream_state', state: 'failing', request_id: 'req-500-quoted' });
    expect(post.body.error).toMatch(/^500 could not score \[e-mail\] \(user_id \[user id\]; email=\[e-mail\]\)/);
    expect(post.body.text).toBe(`campaign-sync: ${failing.name} (session) is failing: ${post.body.error}`);
    // Verified as a receiver does: over the bytes that arrived, with the shared secret.
    expect(post.headers['x-campaign-sync-signature-256']).toBe(hmac(secret, post.raw));
    expect(post.headers['x-campaign-sync-signature-256']).not.toBe(hmac('another secret', post.raw));
    expect(post.headers['x-campaign-sync-event']).toBe('stream_state');
    expect(post.headers['x-campaign-sync-delivery']).toMatch(/^[0-9a-f-]{36}$/);

    // Monitoring carries the check off this host as an alert does: masked there too.
    for (const args of [[], ['--nagios'], ['--json']]) {
      const check = await runCli(['status', '--check', '--db', join(dir, 'm.db'), ...args], {});
      expect(check.stdout).toMatch(/\[e-mail\]/);
      expect(check.stdout.toLowerCase(), args.join(' ')).not.toContain('jane.doe');
      expect(check.stdout, args.join(' ')).not.toContain(USER);
    }
  });

  it('without a secret a POST is unsigned; --notify-secret-file without --notify is refused, as is an empty or unreadable file', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const f = await front(s.url);
    const hook = await webhook();
    const env = { CAMPAIGN_SYNC_BASE_URL: f.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const db = join(tempDir(), 'm.db');
    expect((await runCli(['pull', '--db', db, '--notify', hook.url], { env })).code).toBe(0);
    f.state.fail = { campaignId: (s.data.campaigns[0] as { id: string }).id, status: 404, message: 'Not found', requestId: 'r' };
    expect((await runCli(['pull', '--db', db, '--notify', hook.url, '--max-retries', '0'], { env })).code).toBe(4);
    expect(hook.posts).toHaveLength(1);
    expect(hook.posts[0]?.headers['x-campaign-sync-signature-256']).toBeUndefined();

    const lone = await runCli(['pull', '--db', db, '--notify-secret-file', secretFile('x-secret')], { env });
    expect(lone.code).toBe(2);
    expect(lone.stderr).toBe('campaign-sync: --notify-secret-file signs the POSTs of --notify: give --notify <url> too\n');
    const empty = join(tempDir(), 'empty');
    writeFileSync(empty, '\n', { mode: 0o600 });
    const e = await runCli(['pull', '--db', db, '--notify', hook.url, '--notify-secret-file', empty], { env });
    expect(e.code).toBe(2);
    expect(e.stderr).toBe(`campaign-sync: --notify-secret-file: ${empty} is empty\n`);
    const missing = join(tempDir(), 'nowhere');
    const m = await runCli(['pull', '--db', db, '--notify', hook.url, '--notify-secret-file', missing], { env });
    expect(m.code).toBe(2);
    expect(m.stderr).toBe(`campaign-sync: --notify-secret-file: cannot read ${missing}: no such file or folder (ENOENT)\n`);
  });

  it('CAMPAIGN_SYNC_NOTIFY_SECRET signs as the file does', async () => {
    const hook = await webhook();
    const r = await runCli(['notify-test', '--notify', hook.url], { env: { CAMPAIGN_SYNC_NOTIFY_SECRET: 'from-the-environment' } });
    expect(r.code, r.stderr).toBe(0);
    const post = hook.posts[0] as (typeof hook.posts)[number];
    expect(post.headers['x-campaign-sync-signature-256']).toBe(hmac('from-the-environment', post.raw));
  });
});

describe('campaign-sync notify-test', () => {
  it('sends one signed test document that a chat webhook can show; exit 0', async () => {
    const hook = await webhook();
    const secret = 'whsec-test-secret';
    const r = await runCli(['notify-test', '--notify', `${hook.url}?token=t0ken`, '--notify-secret-file', secretFile(secret)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Sent a test notification to http:\/\/127\.0\.0\.1:\d+ \(HTTP 200\), signed\.\n$/);
    expect(r.stdout + r.stderr).not.toContain('t0ken');
    expect(hook.posts).toHaveLength(1);
    const post = hook.posts[0] as (typeof hook.posts)[number];
    expect(post.path).toBe('/hook?token=t0ken');
    expect(post.headers['x-campaign-sync-event']).toBe('test');
    expect(post.body).toMatchObject({ type: 'campaign-sync.test' });
    expect(post.body.text).toMatch(/^campaign-sync: a test notification from .+; stream state changes will arrive here$/);
    expect(post.headers['x-campaign-sync-signature-256']).toBe(hmac(secret, post.raw));
  });

  it('a receiver that refuses it is exit 2 naming the set-up; none given is exit 2', async () => {
    const hook = await webhook(401);
    const r = await runCli(['notify-test', '--notify', hook.url, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^campaign-sync: notify-test: http:\/\/127\.0\.0\.1:\d+ refused the test notification \(HTTP 401\): check the --notify URL\n$/,
    );
    expect(hook.posts).toHaveLength(1);
    const none = await runCli(['notify-test']);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('campaign-sync: notify-test: give the webhook with --notify <url>, as pull and watch take it\n');
  });
});

describe('a POST that runs out of time', () => {
  it('is said as `timed out after 10 s`', async () => {
    const hook = await webhook('hang');
    // The 10 s bound, ended by the test once the receiver holds the POST: no waiting it out.
    const bound = new AbortController();
    const given: number[] = [];
    const notifier = new Notifier(new URL(hook.url), {
      retries: 0,
      deadline: (ms) => {
        given.push(ms);
        return bound.signal;
      },
    });
    try {
      const sent = notifier.sendTest('here');
      await hook.arrived();
      bound.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      expect(await sent).toEqual({ problem: 'timed out after 10 s', status: undefined });
      expect(given).toEqual([10_000]);
    } finally {
      await notifier.close();
    }
  });
});
