/**
 * Records no backend could hold as they are, on SQLite, NDJSON and PostgreSQL alike (./mirrors.ts says
 * how to add a case): nested past the rule's depth, a string holding U+0000, a number past a double's
 * range, an order_index past int64, an e-mail too long to index. Each is quarantined with its reason
 * on every sink, the rest of its page is stored and the stream goes on (store/model/quarantine.ts
 * unstorable, applied with the record rules of sync/records.ts). The simulator serves them through its
 * own `malformed` kinds; what it has no kind for, a relay in front of it writes into its pages.
 */
import { describe, expect, it } from 'vitest';
import { parseJsonBytes } from '../../src/core/json-bytes.js';
import { DEEP_LEVELS } from '../../src/simulator/malformed.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { MAX_DEPTH, MAX_INDEXED_BYTES } from '../../src/store/model/storable.js';
import { get, sim } from '../helpers/index.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';
import { rewritingRelay } from './relay.js';

type Campaign = RunningSimulator['data']['campaigns'][number];

const RECORDS = 100;
/** Records 25, 50, 75 and 100 of each campaign, one kind each, in turn. */
const MALFORMED = { every: 25, kinds: ['deep', 'nul', 'huge-number', 'int64'] as const };

function campaignOf(s: RunningSimulator, type: Campaign['type']): Campaign {
  const c = s.data.campaigns.find((x) => x.type === type);
  if (!c) throw new Error(`the simulator serves no ${type} campaign`);
  return c;
}

const endpointOf = (c: Campaign) => (c.type === 'SESSION_COMPLETION' ? 'session' : 'role');

/** The one page of campaign `c` (pages of 100), as served: its text and its records read as the client reads them. */
async function pageOf(s: RunningSimulator, c: Campaign) {
  const q = `campaign_id=${c.id}&sort=asc&limit=100${c.type === 'ROLE_SUBMISSION' ? '&report_type=DETAILED' : ''}`;
  const page = await get(s, `/v1/campaigns/${endpointOf(c)}/results?${q}`);
  expect(page.status).toBe(200);
  const body = parseJsonBytes(Buffer.from(page.text)) as { data: Array<Record<string, unknown>> };
  return { text: page.text, data: body.data };
}

/** A page rewrite that changes the records at the positions `changes` names (1-based). */
function changing(changes: Record<number, (record: Record<string, unknown>) => void>): (text: string) => string {
  return (text) => {
    const page = JSON.parse(text) as { data: Array<Record<string, unknown>> };
    for (const [position, change] of Object.entries(changes)) {
      const record = page.data[Number(position) - 1];
      if (record !== undefined) change(record);
    }
    return JSON.stringify(page);
  };
}

/** A value `levels` objects deep: `{ level: { level: … { end: true } } }`. */
function nested(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { end: true };
  for (let i = 1; i < levels; i++) v = { level: v };
  return v;
}

/** Runs `command` against `m` with the API at `url` (a relay) instead of the simulator's own. */
function via(m: Mirror, s: RunningSimulator, url: string, command: string, ...args: string[]) {
  return m.run({ ...s, url }, command, ...args);
}

describe.each(MIRRORS)('records no backend can hold as they are (%s)', (kind) => {
  it(`a page of ${RECORDS} with one record ${DEEP_LEVELS} levels deep, one holding U+0000, a score of 1e400 and an order_index past int64: those 4 quarantined with their reasons, the 96 others stored, the stream to its end; a second pull adds nothing`, async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS, malformed: MALFORMED });
    const m = open(kind);
    const pull = await m.run(s, 'pull', '--json');
    expect(pull.code, pull.stderr).toBe(0);
    const doc = JSON.parse(pull.stdout) as { streams: Array<{ campaign_id: string; status: string; cursor: string; records: number }> };
    const byId = await m.records();
    const rows = await m.state(
      'SELECT stream, campaign_id, record_id, order_index, raw, reason, page_position FROM quarantine ORDER BY id',
    );
    expect(rows).toHaveLength(2 * 4);
    for (const c of [campaignOf(s, 'SESSION_COMPLETION'), campaignOf(s, 'ROLE_SUBMISSION')]) {
      const stream = doc.streams.find((x) => x.campaign_id === c.id);
      expect(stream?.status, c.id).toBe('ok');
      // The stream's end: the last record (order_index past int64) is quarantined, its envelope names where the page ends.
      expect(stream?.cursor).toBe(String(s.data.orderIndex(c, RECORDS - 1)));
      expect(stream?.records).toBe(RECORDS - 4);
      const page = await pageOf(s, c);
      const bad = new Set([25, 50, 75, 100]);
      // The 96 others, each as served.
      const good = page.data.filter((_, i) => !bad.has(i + 1));
      expect(good).toHaveLength(RECORDS - 4);
      for (const r of good) expect(byId.get(String(r.id))?.record, String(r.id)).toEqual(r);
      for (const p of bad) expect(byId.has(String(page.data[p - 1]?.id)), `position ${p}`).toBe(false);

      const mine = rows.filter((r) => r.campaign_id === c.id);
      expect(mine.map((r) => Number(r.page_position))).toEqual([25, 50, 75, 100]);
      const [deep, nul, huge, int64] = mine;
      // Each kept exactly as served: its bytes in the page's body.
      for (const r of mine) expect(page.text.includes(String(r.raw)), String(r.reason)).toBe(true);
      const id = (p: number) => String(page.data[p - 1]?.id);
      expect(deep?.reason).toMatch(
        new RegExp(
          `^trace\\.level\\.level.*: nested deeper than ${MAX_DEPTH} levels of arrays and objects — record 25 of 100 \\(id ${id(25)}\\)`,
        ),
      );
      expect(deep?.record_id).toBe(id(25));
      expect(String(deep?.raw).length).toBeGreaterThan(DEEP_LEVELS * 8);
      expect(nul?.reason).toMatch(
        new RegExp(`^note: this string holds U\\+0000 or a lone surrogate.* — record 50 of 100 \\(id ${id(50)}\\)`),
      );
      expect(String(nul?.raw)).toContain('\\u0000');
      const score = c.type === 'SESSION_COMPLETION' ? 'score' : 'overall_score';
      expect(huge?.reason).toMatch(
        new RegExp(`^${score}: 1e400 is a number out of the range of a double.* — record 75 of 100 \\(id ${id(75)}\\)`),
      );
      expect(String(huge?.raw)).toContain(`"${score}":1e400`);
      expect(int64?.reason).toMatch(/^order_index: 9223372036854775808 is not a non-negative int64.* — record 100 of 100 \(id [^)]+\)/);
      expect(int64?.order_index).toBeNull();
    }
    // No reason holds a raw U+0000 (PostgreSQL's text could not hold it either).
    for (const r of rows) expect(String(r.reason).includes('\u0000')).toBe(false);

    // A second pull is a no-op: nothing new to the mirror, nothing to the quarantine.
    const held = await m.rows();
    const again = await m.run(s, 'pull', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { records: number }).records).toBe(0);
    expect(again.stderr).not.toMatch(/quarantine/);
    expect(await m.rows()).toEqual(held);
    // Read again whole, the same records are kept once.
    const full = await m.run(s, 'pull', '--full', '--json');
    expect(full.code, full.stderr).toBe(0);
    expect(Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n)).toBe(8);

    const list = await m.run(s, 'quarantine', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    const listed = (JSON.parse(list.stdout) as { quarantined: Array<{ reason: string; page_position: number }> }).quarantined;
    expect(listed).toHaveLength(8);
    expect(listed.filter((q) => /nested deeper than/.test(q.reason))).toHaveLength(2);
    expect(listed.filter((q) => /U\+0000/.test(q.reason))).toHaveLength(2);
    expect(listed.filter((q) => /1e400/.test(q.reason))).toHaveLength(2);
    // In people's words too, escaped for a terminal.
    const text = await m.run(s, 'quarantine', 'list');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/nested deeper than 500 levels/);
  });

  it(`the rule is below every backend: a record ${MAX_DEPTH} levels deep is stored and exported, one level more is quarantined; an e-mail past ${MAX_INDEXED_BYTES} bytes too`, async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 6 });
    const c = campaignOf(s, 'ROLE_SUBMISSION');
    const m = open(kind);
    // The record is level 1, its `trace` level 2: `trace` nested MAX_DEPTH - 1 levels makes the record MAX_DEPTH deep.
    const relay = await rewritingRelay(
      s,
      changing({
        2: (r) => {
          r.trace = nested(MAX_DEPTH - 1);
        },
        3: (r) => {
          r.trace = nested(MAX_DEPTH);
        },
        4: (r) => {
          (r.user as { email: string }).email = `${'x'.repeat(MAX_INDEXED_BYTES)}@example.com`;
        },
      }),
    );
    const pulled = await via(m, s, relay, 'pull', '--campaign', c.id, '--json');
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(pulled.stderr).toMatch(
      /\(role DETAILED\): 2 records failed the record rules and went to the quarantine \(trace…: 1, user\.email: 1\)/,
    );
    const held = await m.records();
    const ids = [0, 1, 2, 3, 4, 5].map((i) => String(s.data.roleResult(c, i, 'DETAILED').id));
    expect([...held.keys()].sort()).toEqual([ids[0], ids[1], ids[4], ids[5]].sort());
    expect((held.get(ids[1] as string)?.record as { trace: unknown } | undefined)?.trace).toEqual(nested(MAX_DEPTH - 1));
    const reasons = (await m.state('SELECT record_id, reason FROM quarantine ORDER BY id')).map((r) => [r.record_id, String(r.reason)]);
    expect(reasons).toEqual([
      [
        ids[2],
        expect.stringMatching(
          new RegExp(`^trace(\\.level)+… \\(${MAX_DEPTH} levels down\\): nested deeper than ${MAX_DEPTH} levels.* — record 3 of 6 `),
        ),
      ],
      [
        ids[3],
        expect.stringMatching(
          new RegExp(
            `^user\\.email: ${MAX_INDEXED_BYTES + 12} bytes, longer than the ${MAX_INDEXED_BYTES} an indexed column takes.* — record 4 of 6 `,
          ),
        ),
      ],
    ]);
    // Read back through the backend's own JSON functions (SQLite's views rebuild a DETAILED record's
    // raw); an NDJSON folder is its own export.
    if (kind !== 'ndjson') {
      const exported = await m.run(s, 'export', '--table', 'role-results', '--format', 'ndjson');
      expect(exported.code, exported.stderr).toBe(0);
      const line = exported.stdout.split('\n').find((l) => l.includes(ids[1] as string)) as string;
      expect((JSON.parse(line) as { raw: { trace: unknown } }).raw.trace).toEqual(nested(MAX_DEPTH - 1));
      const csv = await m.run(s, 'export', '--table', 'latest_results', '--format', 'csv');
      expect(csv.code, csv.stderr).toBe(0);
      expect(csv.stdout).toContain(ids[1]);
    }
  });

  it('a record 100,000 levels deep in a page that needs the lossless parser (an order_index past 2^53): quarantined, nothing of our own code overflows its stack', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 5, orderIndexStart: 2n ** 53n + 1n });
    const c = campaignOf(s, 'SESSION_COMPLETION');
    const m = open(kind);
    const target = String(s.data.sessionResult(c, 2).id);
    const levels = 100_000;
    const deep = `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const relay = await rewritingRelay(s, (text) => text.replace(`"id":"${target}"`, `"trace":${deep},"id":"${target}"`));
    const pull = await via(m, s, relay, 'pull', '--campaign', c.id, '--json');
    expect(pull.code, pull.stderr).toBe(0);
    const doc = JSON.parse(pull.stdout) as { streams: Array<{ status: string; cursor: string }> };
    expect(doc.streams[0]?.status).toBe('ok');
    expect(doc.streams[0]?.cursor).toBe(String(s.data.orderIndex(c, 4)));
    const held = await m.records();
    expect(held.size).toBe(4);
    expect(held.has(target)).toBe(false);
    // The others kept their int64 order_index exact (read losslessly, record by record).
    const first = held.get(String(s.data.sessionResult(c, 0).id))?.record as { order_index: unknown };
    expect(first.order_index).toBe(s.data.orderIndex(c, 0));
    const [q] = await m.state('SELECT record_id, order_index, raw, reason FROM quarantine');
    expect(q?.record_id).toBe(target);
    expect(String(q?.reason)).toMatch(/^trace(\.a)+… \(500 levels down\): nested deeper than 500 levels.* — record 3 of 5 /);
    expect(String(q?.raw)).toContain(deep);
  });
});
