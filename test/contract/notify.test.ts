/**
 * `--notify <url>` on every kind of mirror (./mirrors.ts says how to add a case): one JSON POST per
 * stream state change (failing, recovered, unlisted), none on a pass that changes nothing, for the
 * state each delivered is kept in the mirror, per stream, each delivery replacing the one before.
 * Retries, redirects, watch and the URL's checks are test/component/app/notify.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { sim } from '../helpers/index.js';
import { front, type Hook, webhook } from '../helpers/webhook.js';
import { MIRRORS, open, unsupported } from './mirrors.js';

describe.each(MIRRORS)('--notify (%s)', (kind) => {
  it('pull: one POST per state change, none when nothing changes; failing carries the error and request_id, recovered follows; the mirror keeps what was told', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 10 });
    const f = await front(s.url);
    const hook = await webhook();
    const m = open(kind);
    const pull = () => m.run(s, 'pull', '--base-url', f.url, '--notify', hook.url, '--quiet');
    /** The state last delivered per stream, as the mirror keeps it. */
    const told = async () => (await m.state("SELECT key, value FROM meta WHERE key LIKE 'notified:%'")).map((r) => [r.key, r.value]).sort();
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toEqual([]);
    expect(await told()).toEqual([]);

    const failing = s.data.campaigns[0]?.id as string;
    const key = `notified:${failing}/session`;
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
    expect(await told()).toEqual([[key, 'failing']]);

    // Still failing: nothing new.
    expect((await pull()).code).toBe(4);
    expect(hook.posts).toHaveLength(1);

    f.state.fail = undefined;
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(2);
    expect(hook.posts[1]?.body).toMatchObject({ campaign_id: failing, state: 'recovered', previous_state: 'failing', error: null });
    expect(await told()).toEqual([[key, 'ok']]);
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(2);

    // A campaign the service stops listing.
    f.state.hide = failing;
    expect((await pull()).code).toBe(0);
    expect(hook.posts).toHaveLength(3);
    expect(hook.posts[2]?.body).toMatchObject({ campaign_id: failing, state: 'unlisted' });
    expect(await told()).toEqual([[key, 'unlisted']]);
    // And the other stream fails: its state is kept beside the first's.
    const other = s.data.campaigns[1]?.id as string;
    f.state.fail = other;
    expect((await pull()).code).toBe(4);
    expect(hook.posts).toHaveLength(4);
    expect(hook.posts[3]?.body).toMatchObject({ campaign_id: other, state: 'failing' });
    expect(await told()).toEqual(
      [
        [key, 'unlisted'],
        [`notified:${other}/role/DETAILED`, 'failing'],
      ].sort(),
    );
  });
});
