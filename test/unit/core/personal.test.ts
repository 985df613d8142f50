/** What `--notify` masks in an error text before it leaves the host: e-mails and users' ids, nothing a receiver needs. */
import { describe, expect, it } from 'vitest';
import { maskPersonal } from '../../../src/core/personal.js';

describe('maskPersonal', () => {
  it('masks e-mail addresses, plain or URL-encoded, in any script and case', () => {
    expect(maskPersonal('500 no result for Jane.Doe+x@Example.COM in campaign c1')).toBe('500 no result for [e-mail] in campaign c1');
    expect(maskPersonal('GET /x?email=jane%40example.com&limit=1')).toBe('GET /x?email=[e-mail]&limit=1');
    expect(maskPersonal('Zoë@exemple.fr, élodie@exemple.fr.')).toBe('[e-mail], [e-mail].');
  });

  it('masks the value after a word naming a user, in prose, a query and JSON; a bare one must hold a digit', () => {
    expect(maskPersonal('user u-42 is not in this campaign')).toBe('user [user id] is not in this campaign');
    expect(maskPersonal('user_id=u1&x=2; userId: 12345.')).toBe('user_id=[user id]&x=2; userId: [user id].');
    expect(maskPersonal('{"user_id":"abc","candidate":"Jane Doe"}')).toBe('{"user_id":"[user id]","candidate":"[user id]"}');
    expect(maskPersonal("candidate 'Jane Doe' has no result")).toBe("candidate '[user id]' has no result");
  });

  it('keeps what names no person: words, campaign names, request and campaign ids', () => {
    for (const text of [
      'user not found',
      'campaign user-research-2026 failed',
      'users 12 of 30',
      '500 Internal server error — GET /v1/campaigns/role/results (campaign 1fd25390-c20a-4b40-9a80-74259b12ee9c) [request_id a3c1e2f0]',
    ])
      expect(maskPersonal(text)).toBe(text);
  });
});
