import { describe, expect, it } from 'vitest';
import { parseDate } from '../../../src/config/duration.js';
import { parseFaults } from '../../../src/simulator/faults.js';
import {
  CEFR_LEVELS,
  SCENARIO_TYPE_KEYS,
  SKILL_KEYS,
  specCampaignList,
  specError,
  specPage,
  specRoleDetailed,
  specRoleOverall,
  specSessionResult,
} from '../../../src/spec/schemas.js';
import { get, sim } from '../../helpers/index.js';

async function campaignsOf(s: Awaited<ReturnType<typeof sim>>) {
  const { json } = await get(s, '/v1/campaigns');
  const list = specCampaignList.parse(json).data;
  return {
    session: list.filter((c) => c.type === 'SESSION_COMPLETION'),
    role: list.filter((c) => c.type === 'ROLE_SUBMISSION'),
  };
}

/** Reads every page of a stream in the given direction. */
async function readAll(s: Awaited<ReturnType<typeof sim>>, base: string, sort: 'asc' | 'desc', limit: number) {
  const out: Array<{ order_index: number; id: string }> = [];
  let cursor: number | null = null;
  let pages = 0;
  for (;;) {
    const q: string = `${base}&sort=${sort}&limit=${limit}${cursor === null ? '' : `&starting_after=${cursor}`}`;
    const { status, json } = await get(s, q);
    expect(status).toBe(200);
    pages++;
    out.push(...json.data);
    expect(json.data.length).toBeLessThanOrEqual(limit);
    if (!json.has_more) break;
    cursor = json.last_record_index;
    expect(cursor).toBe(json.data.at(-1).order_index);
  }
  return { records: out, pages };
}

describe('simulator: resources match the spec', () => {
  it('serves campaigns of both types with every field of §2.1', async () => {
    const s = await sim({ campaigns: 4, records: 30 });
    const { session, role } = await campaignsOf(s);
    expect(session.length).toBe(2);
    expect(role.length).toBe(2);
  });

  it('session results carry every field of §2.11, all scenario and skill keys, CEFR levels and the three empty shapes', async () => {
    const s = await sim({ campaigns: 2, records: 400 });
    const { session } = await campaignsOf(s);
    const { records } = await readAll(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`, 'asc', 100);
    expect(records.length).toBe(400);
    const parsed = records.map((r) => specSessionResult.parse(r));
    const scenarioKeys = new Set(parsed.map((r) => r.scenario.type.key));
    const skillKeys = new Set(parsed.flatMap((r) => r.eval_results.map((e) => e.skill.key)));
    expect([...scenarioKeys].sort()).toEqual([...SCENARIO_TYPE_KEYS].sort());
    expect([...skillKeys].sort()).toEqual([...SKILL_KEYS].sort());
    const cefr = new Set(parsed.map((r) => r.additional_scores?.cefr?.score).filter(Boolean));
    expect([...cefr].sort()).toEqual([...CEFR_LEVELS]);
    const raw = records as Array<Record<string, unknown>>;
    expect(raw.some((r) => !('additional_scores' in r))).toBe(true);
    expect(raw.some((r) => r.additional_scores === null)).toBe(true);
    expect(raw.some((r) => JSON.stringify(r.additional_scores) === '{}')).toBe(true);
    expect(parsed.some((r) => r.feedback === null)).toBe(true);
    expect(parsed.some((r) => r.feedback !== null)).toBe(true);
    // Text that trips naive CSV and ASCII handling.
    const text = JSON.stringify(records);
    expect(text).toMatch(/\\n/);
    expect(text).toMatch(/\\"/);
    expect(text).toMatch(/[^\x00-\x7f]/);
    expect(text).toMatch(/, /);
  });

  it('role results: OVERALL is §2.4, DETAILED is §2.5 with score details lacking a timezone', async () => {
    const s = await sim({ campaigns: 2, records: 50 });
    const { role } = await campaignsOf(s);
    const id = role[0]?.id;
    const overall = await get(s, `/v1/campaigns/role/results?campaign_id=${id}&report_type=OVERALL&limit=50&sort=asc`);
    const detailed = await get(s, `/v1/campaigns/role/results?campaign_id=${id}&report_type=DETAILED&limit=50&sort=asc`);
    const o = specPage(specRoleOverall).parse(overall.json);
    const d = specPage(specRoleDetailed).parse(detailed.json);
    expect(o.data.length).toBe(50);
    expect(d.data.map((r) => r.id)).toEqual(o.data.map((r) => r.id));
    expect(d.data[0]?.overall_score).toBe(o.data[0]?.overall_score);
    const details = d.data.flatMap((r) => r.score_details);
    expect(details.length).toBeGreaterThan(50);
    expect(details.every((x) => !/(Z|[+-]\d\d:\d\d)$/.test(x.created_at))).toBe(true);
    expect(d.data.every((r) => /Z$/.test(r.created_at))).toBe(true);
    // The default report type is OVERALL.
    const dflt = await get(s, `/v1/campaigns/role/results?campaign_id=${id}&limit=5`);
    specPage(specRoleOverall).parse(dflt.json);
  });

  it('eval scores are numeric strings', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const { session } = await campaignsOf(s);
    const { json } = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`);
    for (const r of json.data) for (const e of r.eval_results) expect(e.score).toMatch(/^\d+\.\d$/);
  });
});

describe('simulator: query semantics', () => {
  it('defaults: limit 10, sort desc', async () => {
    const s = await sim({ campaigns: 1, records: 25 });
    const { session } = await campaignsOf(s);
    const { json } = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`);
    expect(json.data.length).toBe(10);
    const idx = json.data.map((r: { order_index: number }) => r.order_index);
    expect(idx).toEqual([...idx].sort((a, b) => b - a));
    expect(json.has_more).toBe(true);
    expect(json.last_record_index).toBe(idx.at(-1));
  });

  it('pages asc and desc across many pages with no gap or duplicate, limit honoured', async () => {
    const s = await sim({ campaigns: 2, records: 237 });
    const { session, role } = await campaignsOf(s);
    for (const base of [
      `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`,
      `/v1/campaigns/role/results?campaign_id=${role[0]?.id}&report_type=DETAILED`,
    ]) {
      const asc = await readAll(s, base, 'asc', 3 + 20);
      const desc = await readAll(s, base, 'desc', 7);
      expect(asc.records.length).toBe(237);
      expect(asc.pages).toBe(Math.ceil(237 / 23));
      expect(new Set(asc.records.map((r) => r.id)).size).toBe(237);
      const ascIdx = asc.records.map((r) => r.order_index);
      for (let i = 1; i < ascIdx.length; i++) expect(ascIdx[i]).toBeGreaterThan(ascIdx[i - 1] as number);
      expect(desc.records.map((r) => r.id)).toEqual([...asc.records].reverse().map((r) => r.id));
    }
  });

  it('the last page says has_more false and an empty tail reads as an empty page with a null cursor', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const { session } = await campaignsOf(s);
    const first = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&limit=5`);
    expect(first.json.has_more).toBe(false);
    const after = await get(
      s,
      `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&starting_after=${first.json.last_record_index}`,
    );
    expect(after.json).toEqual({ data: [], has_more: false, last_record_index: null });
  });

  it('date filters are inclusive on the UTC day of created_at, alone or together', async () => {
    const s = await sim({ campaigns: 1, records: 300 });
    const { session } = await campaignsOf(s);
    const base = `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`;
    const all = (await readAll(s, base, 'asc', 100)).records as unknown as Array<{ created_at: string; id: string }>;
    const day = all[150]?.created_at.slice(0, 10) as string;
    const oneDay = (await readAll(s, `${base}&start_date=${day}&end_date=${day}`, 'asc', 100)).records;
    expect(oneDay.length).toBeGreaterThan(0);
    expect(oneDay.map((r) => r.id)).toEqual(all.filter((r) => r.created_at.slice(0, 10) === day).map((r) => r.id));
    const from = (await readAll(s, `${base}&start_date=${day}`, 'asc', 100)).records;
    expect(from.map((r) => r.id)).toEqual(all.filter((r) => r.created_at.slice(0, 10) >= day).map((r) => r.id));
    const until = (await readAll(s, `${base}&end_date=${day}`, 'desc', 100)).records;
    expect(until.length).toBe(all.filter((r) => r.created_at.slice(0, 10) <= day).length);
  });

  it('the same seed gives the same data; another seed other data', async () => {
    const a = await sim({ seed: 42, campaigns: 2, records: 20 });
    const b = await sim({ seed: 42, campaigns: 2, records: 20 });
    const c = await sim({ seed: 43, campaigns: 2, records: 20 });
    const read = async (s: typeof a) => {
      const { role } = await campaignsOf(s);
      return (await get(s, `/v1/campaigns/role/results?campaign_id=${role[0]?.id}&report_type=DETAILED&limit=20`)).text;
    };
    expect(await read(a)).toBe(await read(b));
    expect(await read(a)).not.toBe(await read(c));
  });

  it('growth adds records over time', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 1, records: 10, growth: { count: 5, windowMs: 60_000 }, now: () => now });
    const { session } = await campaignsOf(s);
    const base = `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`;
    const before = (await readAll(s, base, 'asc', 100)).records;
    now += 60_000;
    const after = (await readAll(s, base, 'asc', 100)).records;
    expect(before.length).toBe(10);
    expect(after.length).toBe(15);
    const last = before.at(-1)?.order_index;
    const fresh = await get(s, `${base}&sort=asc&starting_after=${last}`);
    expect(fresh.json.data.length).toBe(5);
  });

  it('growthCampaigns: only the first N campaigns grow, the rest keep their records', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 4, records: 10, growth: { count: 5, windowMs: 60_000 }, growthCampaigns: 2, now: () => now });
    const { session, role } = await campaignsOf(s);
    const count = async (path: string, id: string | undefined) =>
      (await readAll(s, `/v1/campaigns/${path}/results?campaign_id=${id}${path === 'role' ? '&report_type=OVERALL' : ''}`, 'asc', 100))
        .records.length;
    now += 60_000;
    // Campaigns alternate session, role: the first two are session[0] and role[0].
    expect(await count('session', session[0]?.id)).toBe(15);
    expect(await count('role', role[0]?.id)).toBe(15);
    expect(await count('session', session[1]?.id)).toBe(10);
    expect(await count('role', role[1]?.id)).toBe(10);
    // The new records carry their arrival time, as with --growth on every campaign.
    const { json } = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=desc&limit=1`);
    expect(Date.parse(json.data[0].created_at)).toBeGreaterThan(Date.UTC(2026, 10, 1));
  });

  it('order_index past 2^53 is served as an exact integer', async () => {
    const s = await sim({ campaigns: 1, records: 3, orderIndexStart: 2n ** 60n });
    const { session } = await campaignsOf(s);
    const { text } = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc`);
    const m = /"order_index":(\d+)/.exec(text);
    expect(BigInt(m?.[1] ?? 0)).toBeGreaterThan(2n ** 60n);
    const cursor = m?.[1];
    const next = await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&starting_after=${cursor}`);
    expect(next.status).toBe(200);
    expect(next.json.data.length).toBe(2);
  });
});

describe('simulator: errors', () => {
  it('401 for a missing or wrong key, with the spec body', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    for (const key of [null, 'wrong']) {
      const res = await get(s, '/v1/campaigns', key);
      expect(res.status).toBe(401);
      expect(specError.parse(res.json).error).toMatchObject({ message: 'Unauthorized', status_code: 401 });
    }
  });

  it('404 for an unknown campaign and for a campaign on the other type endpoint', async () => {
    const s = await sim({ campaigns: 2, records: 1 });
    const { session, role } = await campaignsOf(s);
    for (const path of [
      '/v1/campaigns/role/results?campaign_id=00000000-0000-4000-8000-000000000000',
      `/v1/campaigns/role/results?campaign_id=${session[0]?.id}`,
      `/v1/campaigns/session/results?campaign_id=${role[0]?.id}`,
      '/v1/nothing-here',
    ]) {
      const res = await get(s, path);
      expect(res.status).toBe(404);
      expect(specError.parse(res.json).error).toMatchObject({ message: 'Not found', status_code: 404 });
    }
  });

  it('400 for invalid parameters', async () => {
    const s = await sim({ campaigns: 2, records: 1 });
    const { role } = await campaignsOf(s);
    const base = `/v1/campaigns/role/results?campaign_id=${role[0]?.id}`;
    for (const q of [
      '&limit=0',
      '&limit=101',
      '&limit=x',
      '&sort=up',
      '&start_date=2026-1-1',
      '&end_date=yesterday',
      '&starting_after=abc',
      '&starting_after=1.5',
      '&starting_after=99999999999999999999',
      '&report_type=FULL',
    ]) {
      const res = await get(s, base + q);
      expect(res.status, q).toBe(400);
      expect(specError.parse(res.json).error.status_code).toBe(400);
    }
    expect((await get(s, '/v1/campaigns/role/results')).status).toBe(400);
  });

  it('400 for a date the calendar does not have (never rolled over to the next month), as the client refuses it', async () => {
    const s = await sim({ campaigns: 2, records: 1 });
    const { session } = await campaignsOf(s);
    const base = `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`;
    for (const [q, message] of [
      ['&start_date=2026-02-30&end_date=2026-02-30', 'start_date: "2026-02-30" is not a day of the calendar (2026-02 has 28 days)'],
      ['&end_date=2026-04-31', 'end_date: "2026-04-31" is not a day of the calendar (2026-04 has 30 days)'],
      ['&start_date=2025-02-29', 'start_date: "2025-02-29" is not a day of the calendar (2025-02 has 28 days)'],
      ['&start_date=2026-13-45', 'start_date: "2026-13-45" has no month 13'],
      ['&start_date=2026-00-10', 'start_date: "2026-00-10" has no month 00'],
      ['&end_date=2026-01-00', 'end_date: "2026-01-00" is not a day of the calendar (2026-01 has 31 days)'],
      ['&end_date=2026-1-1', 'end_date: "2026-1-1" is not a date in the form YYYY-MM-DD'],
    ] as const) {
      const res = await get(s, base + q);
      expect(res.status, q).toBe(400);
      expect(specError.parse(res.json).error).toMatchObject({ message, status_code: 400 });
      // The client's own check says the same of --since.
      const value = q.split('=').at(-1) as string;
      expect(() => parseDate(value, 'x')).toThrow(`x: ${message.slice(message.indexOf('"'))}`);
    }
    // A leap day is a day.
    expect((await get(s, `${base}&start_date=2024-02-29&end_date=2028-02-29`)).status).toBe(200);
  });

  it('429 with Retry-After past the per-key limit', async () => {
    const s = await sim({ campaigns: 1, records: 1, rateLimit: { count: 3, windowMs: 60_000 } });
    for (let i = 0; i < 3; i++) expect((await get(s, '/v1/campaigns')).status).toBe(200);
    const res = await get(s, '/v1/campaigns');
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(50);
    expect(specError.parse(res.json).error.status_code).toBe(429);
  });

  it('faults: a share of 500/503/429, resets, truncations and slow replies', async () => {
    const s = await sim({ campaigns: 1, records: 1, faults: parseFaults('0.6'), slowMs: 5 });
    for (let i = 0; i < 120; i++) {
      try {
        await get(s, '/v1/campaigns');
      } catch {
        // resets and truncated bodies surface as client errors
      }
    }
    expect(Object.keys(s.stats.faults).sort()).toEqual(['429', '500', '503', 'reset', 'slow', 'truncate']);
  });

  it('parses fault specs and rejects bad ones', () => {
    expect(parseFaults('500=0.1,reset=5%')).toEqual({ '500': 0.1, reset: 0.05 });
    expect(() => parseFaults('teapot=0.1')).toThrow(/kind=share/);
    expect(() => parseFaults('1.5')).toThrow(/share/);
  });
});

describe('data analysts can rehearse on', () => {
  it('candidates recur across results and campaigns; a scenario has one id and one type; the seed decides', async () => {
    const s = await sim({ campaigns: 4, records: 200 });
    const users = new Map<string, { email: string; campaigns: Set<string> }>();
    const scenarios = new Map<string, string>();
    for (const c of s.data.campaigns) {
      for (let i = 0; i < 200; i++) {
        const r = (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED')) as {
          user: { id: string; email: string };
          scenario?: { id: string; name: string; type: { key: string } };
          score_details?: Array<{ scenario: { id: string; name: string; type: { key: string } } }>;
        };
        const u = users.get(r.user.id) ?? { email: r.user.email, campaigns: new Set<string>() };
        expect(u.email).toBe(r.user.email);
        u.campaigns.add(c.id);
        users.set(r.user.id, u);
        for (const sc of [r.scenario, ...(r.score_details ?? []).map((d) => d.scenario)]) {
          if (!sc) continue;
          const seen = `${sc.id}|${sc.type.key}`;
          expect(scenarios.get(sc.name) ?? seen).toBe(seen);
          scenarios.set(sc.name, seen);
        }
      }
    }
    // 800 results from far fewer people, many of them in several campaigns (retakes, several roles).
    expect(users.size).toBeLessThan(400);
    expect([...users.values()].filter((u) => u.campaigns.size > 1).length).toBeGreaterThan(50);
    expect(new Set([...users.values()].map((u) => u.email)).size).toBe(users.size);
    const again = await sim({ campaigns: 4, records: 200 });
    expect(again.data.sessionResult(again.data.campaigns[0]!, 17)).toEqual(s.data.sessionResult(s.data.campaigns[0]!, 17));
  });
});

describe('simulator: time and int64 stay realistic', () => {
  /** Every timestamp of a served record (score details' have no zone: UTC). */
  const timesOf = (r: Record<string, unknown>): number[] => {
    const out: number[] = [];
    const at = (v: unknown) => {
      if (typeof v === 'string') out.push(Date.parse(/Z$|[+-]\d\d:\d\d$/.test(v) ? v : `${v}Z`));
    };
    at(r.created_at);
    at(r.updated_at);
    for (const e of (r.eval_results ?? []) as Array<Record<string, unknown>>) at(e.evaluated_at);
    for (const d of (r.score_details ?? []) as Array<Record<string, unknown>>) {
      at(d.created_at);
      at(d.updated_at);
      for (const e of (d.eval_results ?? []) as Array<Record<string, unknown>>) at(e.evaluated_at);
    }
    return out;
  };

  it('with growth, nothing a record holds is later than the moment it is served, on either endpoint', async () => {
    const start = Date.UTC(2026, 10, 1);
    let now = start;
    // An awkward rate (3 every 7 ms): arrival times are fractions of a millisecond before rounding.
    const s = await sim({ campaigns: 2, records: 2, growth: { count: 3, windowMs: 7 }, now: () => now });
    const { session, role } = await campaignsOf(s);
    const paths = [
      `/v1/campaigns/session/results?campaign_id=${session[0]?.id}`,
      `/v1/campaigns/role/results?campaign_id=${role[0]?.id}&report_type=DETAILED`,
      `/v1/campaigns/role/results?campaign_id=${role[0]?.id}&report_type=OVERALL`,
    ];
    for (const step of [1, 1, 2, 3, 5, 40, 3_600_000]) {
      now += step;
      for (const path of paths) {
        const { json } = await get(s, `${path}&sort=desc&limit=100`);
        expect(json.data.length).toBeGreaterThanOrEqual(2);
        for (const r of json.data) for (const t of timesOf(r)) expect(t).toBeLessThanOrEqual(now);
      }
    }
    // Arrival times follow count() exactly: a record is never created after the first moment it is served.
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[number];
    for (let t = start; t < start + 200; t++) {
      for (let i = 2; i < s.data.count(t, c); i++) expect(s.data.createdAt(i)).toBeLessThanOrEqual(t);
    }
  });

  it('a re-score moves updated_at forward, never back, also for a result that just arrived', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 1, records: 3, growth: { count: 1, windowMs: 1000 }, now: () => now });
    const { session } = await campaignsOf(s);
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[number];
    const byId = async (id: string) =>
      (
        (await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&limit=100`)).json.data as Array<
          Record<string, string>
        >
      ).find((r) => r.id === id) as { updated_at: string };
    now += 1000;
    const arrived = (await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=desc&limit=1`)).json.data[0];
    // Record 3, the first grown one, served the moment it arrived: updated then, not up to an hour later.
    expect(Date.parse(arrived.updated_at)).toBe(now);
    expect(Date.parse(arrived.created_at)).toBe(now);
    now += 5_000;
    s.changes.rescore(c, 3, now);
    expect(Date.parse((await byId(arrived.id)).updated_at)).toBe(now);
    // A clock stepped back: the next change keeps the later time.
    s.changes.rescore(c, 3, now - 60_000);
    expect(Date.parse((await byId(arrived.id)).updated_at)).toBe(now);
    // History results too: a re-score is never earlier than the result's own updated_at.
    const first = (await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&limit=1`)).json.data[0];
    s.changes.rescore(c, 0, Date.parse(first.created_at));
    const again = (await get(s, `/v1/campaigns/session/results?campaign_id=${session[0]?.id}&sort=asc&limit=1`)).json.data[0];
    expect(Date.parse(again.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.updated_at));
  });

  it('an --order-index-start past int64 for its records is refused, naming the largest start that fits', async () => {
    const max = 2n ** 63n - 1n;
    await expect(sim({ campaigns: 1, records: 250, orderIndexStart: 9223372036854775000n })).rejects.toMatchObject({
      exitCode: 2,
      message:
        '--order-index-start 9223372036854775000: 250 records a campaign would reach order_index 9223372036854777499, ' +
        'past int64 (9223372036854775807); the largest start that fits is 9223372036854773308',
    });
    // That start serves up to int64's last value and no further.
    const s = await sim({ campaigns: 1, records: 250, orderIndexStart: 9223372036854773308n });
    const c = s.data.campaigns[0] as (typeof s.data.campaigns)[number];
    for (let i = 0; i < 250; i++) expect(s.data.orderIndex(c, i)).toBeLessThanOrEqual(max);
    // With growth, a year of it is counted; past that year growth stops at int64.
    const growth = { count: 10, windowMs: 60_000 };
    await expect(sim({ campaigns: 1, records: 250, orderIndexStart: 9223372036854773308n, growth })).rejects.toThrow(
      /250 records a campaign and a year of --growth \(5256000 more\) would reach .*; the largest start that fits is 9223372036802213308$/,
    );
    let now = Date.UTC(2026, 10, 1);
    const grown = await sim({ campaigns: 1, records: 250, orderIndexStart: 9223372036802213308n, growth, now: () => now });
    const g = grown.data.campaigns[0] as (typeof grown.data.campaigns)[number];
    now += 3 * 365 * 86_400_000;
    const count = grown.data.count(now, g);
    expect(count).toBeLessThan(250 + 3 * 5_256_000);
    expect(grown.data.orderIndex(g, count - 1)).toBeLessThanOrEqual(max);
    expect(grown.data.orderIndex(g, count)).toBeGreaterThan(max - 10n);
  });
});

describe('the simulator control routes', () => {
  it('need the key, know only served records, and take POST', async () => {
    const s = await sim({ campaigns: 2, records: 3 });
    const url = `${s.url}/_simulator/results/nope/rescore`;
    expect((await fetch(url, { method: 'POST' })).status).toBe(401);
    const auth = { authorization: `Bearer ${s.apiKey}` };
    expect((await fetch(url, { method: 'POST', headers: auth })).status).toBe(404);
    const c = s.data.campaigns[0];
    if (!c) throw new Error('no campaign');
    const id = (c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, 1) : s.data.roleResult(c, 1, 'OVERALL')).id as string;
    expect((await fetch(`${s.url}/_simulator/results/${id}/delete`, { headers: auth })).status).toBe(405);
    const r = await fetch(`${s.url}/_simulator/results/${id}/delete`, { method: 'POST', headers: auth });
    expect(await r.json()).toMatchObject({ id, campaign_id: c.id, index: 1, change: 'delete' });
    expect(s.changes.any).toBe(true);
  });
});
