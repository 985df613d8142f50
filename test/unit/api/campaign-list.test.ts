/**
 * The campaign list's shapes and paging (api/campaign-list.ts) against a mocked service: a paged
 * list is followed to its end, a bare array is the whole list, and a cursor that does not advance
 * (or an endless list) stops with an error instead of looping.
 */
import { describe, expect, it } from 'vitest';
import { MAX_CAMPAIGN_PAGES } from '../../../src/api/campaign-list.js';
import { ApiError, exitCodeForPass } from '../../../src/errors.js';
import { campaignList, mockClient, mockService, pass, testStore } from '../../helpers/mock.js';

const ids = Array.from({ length: 7 }, (_, i) => `${i}0000000-0000-4000-8000-000000000000`);
const campaigns = (...n: number[]) => campaignList(...n.map((i) => ({ id: ids[i] as string, type: 'SESSION_COMPLETION' }))).data;

describe('campaign list: paged, bare, and guarded', () => {
  it('follows has_more with last_record_id, then last_record_index, then the last id, to the end', async () => {
    const { agent, calls } = mockService((url) => {
      const after = url.searchParams.get('starting_after');
      if (after === null) return { body: { data: campaigns(0, 1), has_more: true, last_record_id: ids[1] } };
      if (after === ids[1]) return { body: { data: campaigns(2, 3), has_more: true, last_record_index: 'cursor-3' } };
      if (after === 'cursor-3') return { body: { data: campaigns(4, 5), has_more: true } };
      if (after === ids[5]) return { body: { data: campaigns(6), has_more: false, last_record_id: null } };
      return { status: 400, body: { error: { message: `unexpected ${after}` } } };
    });
    const list = await mockClient(agent).listCampaigns();
    expect(list.map((c) => c.id)).toEqual(ids);
    // The first request has no parameters, as the interface shows; the others only the cursor.
    expect(calls.map((u) => u.search)).toEqual(['', `?starting_after=${ids[1]}`, '?starting_after=cursor-3', `?starting_after=${ids[5]}`]);
  });

  it('a paged list syncs every campaign of every page', async () => {
    const { agent } = mockService((url) => {
      if (url.pathname === '/v1/campaigns') {
        const after = url.searchParams.get('starting_after');
        return after === null ? { body: { data: campaigns(0, 1), has_more: true } } : { body: { data: campaigns(2), has_more: false } };
      }
      return { body: [] };
    });
    const store = testStore();
    const result = await pass(mockClient(agent), store);
    expect(exitCodeForPass(result)).toBe(0);
    expect(result.streams.map((s) => s.id.campaignId)).toEqual(ids.slice(0, 3));
    expect(store.db.prepare('SELECT count(*) FROM campaigns').pluck().get()).toBe(3);
  });

  it('a bare-array list is the whole list, in one request', async () => {
    const { agent, calls } = mockService(() => ({ body: campaigns(0, 1, 2) }));
    expect((await mockClient(agent).listCampaigns()).map((c) => c.id)).toEqual(ids.slice(0, 3));
    expect(calls.length).toBe(1);
  });

  it('a campaign listed on two pages is kept once', async () => {
    const { agent } = mockService((url) =>
      url.searchParams.get('starting_after') === null
        ? { body: { data: campaigns(0, 1), has_more: true } }
        : { body: { data: campaigns(1, 2), has_more: false } },
    );
    expect((await mockClient(agent).listCampaigns()).map((c) => c.id)).toEqual(ids.slice(0, 3));
  });

  const first = { data: campaigns(0, 1), has_more: true, last_record_id: ids[1] };
  for (const [what, later, message, requests] of [
    [
      'the same cursor again',
      () => ({ data: campaigns(2), has_more: true, last_record_id: ids[1] }),
      /page 2: the cursor did not advance \(next .* was already sent\)/,
      2,
    ],
    [
      'a cursor sent two pages back',
      (after: string) =>
        after === 'x'
          ? { data: campaigns(3), has_more: true, last_record_id: ids[1] }
          : { data: campaigns(2), has_more: true, last_record_id: 'x' },
      /page 3: the cursor did not advance/,
      3,
    ],
    ['has_more with an empty page', () => ({ data: [], has_more: true }), /page 2: has_more is true but the page is empty/, 2],
    [
      'a cursor that is no string',
      () => ({ data: campaigns(2), has_more: true, last_record_id: { id: 1 } }),
      /page 2: last_record_id is not a usable cursor/,
      2,
    ],
  ] as const) {
    it(`stops on ${what}: an invalid answer (exit 4), after a bounded number of requests`, async () => {
      const { agent, calls } = mockService((url) => {
        const after = url.searchParams.get('starting_after');
        return { body: after === null ? first : later(after) };
      });
      const err = await mockClient(agent)
        .listCampaigns()
        .catch((e) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err.message).toMatch(/ — GET \/v1\/campaigns$/);
      expect(err.message).toMatch(message);
      expect(err.exitCode).toBe(4);
      expect(calls.length).toBe(requests);
    });
  }

  it('a list that never ends stops at the page cap', async () => {
    let n = 0;
    const { agent, calls } = mockService(() => {
      n++;
      return { body: { data: [{ id: `c-${n}`, type: 'SESSION_COMPLETION' }], has_more: true } };
    });
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toMatch(new RegExp(`more than ${MAX_CAMPAIGN_PAGES} pages of campaigns`));
    expect(calls.length).toBe(MAX_CAMPAIGN_PAGES);
  });

  it('a bad bare array names the path of the problem', async () => {
    const { agent } = mockService(() => ({ body: [{ id: 'a' }, { name: 'no id' }] }));
    const err = await mockClient(agent)
      .listCampaigns()
      .catch((e) => e);
    expect(err.message).toMatch(/unexpected response: 1\.id/);
  });
});
