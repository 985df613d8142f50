/**
 * forget's contract, on SQLite, NDJSON and PostgreSQL alike (./mirrors.ts says how to add a case): a
 * candidate forgotten by e-mail or by id, one found only inside another's DETAILED result, the
 * copies that name them (past versions, the quarantine, drift's examples), and `--older-than`. Each
 * `forget --json` is compared with what the simulator serves, so every kind answers the same counts;
 * the last case compares the documents of the kinds with tables with each other, number for number.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim } from '../helpers/index.js';
import { MIRRORS, type Mirror, type MirrorKind, ok, open, served, unsupported } from './mirrors.js';

type Obj = Record<string, unknown>;
type Campaign = RunningSimulator['data']['campaigns'][number];
interface Person {
  id: string;
  email: string;
}

interface ForgetDoc {
  removed: Record<string, number>;
  copies: Record<string, number>;
  files: Array<{ path: string; lines: number; changed: number }>;
}

const RECORDS = 20;

/** A candidate found nowhere but inside another candidate's result. */
const NESTED_ONLY: Person = { id: 'c0ffee00-0000-4000-8000-00000000000c', email: 'Nested.Only@Example.com' };

async function forgetJson(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<ForgetDoc> {
  return JSON.parse((await ok(m, s, 'forget', ...args, '--json')).stdout) as ForgetDoc;
}

function campaignOf(s: RunningSimulator, type: Campaign['type']): Campaign {
  const c = s.data.campaigns.find((x) => x.type === type);
  if (!c) throw new Error(`the simulator serves no ${type} campaign`);
  return c;
}

const userOf = (o: unknown): Person | undefined => (o as { user?: Person } | null)?.user;
const isTheirs = (o: unknown, p: Person) => {
  const u = userOf(o);
  return u !== undefined && (String(u.id) === p.id || u.email.toLowerCase() === p.email.toLowerCase());
};
const detailsOf = (r: Obj): Obj[] => (Array.isArray(r.score_details) ? (r.score_details as Obj[]) : []);
const evalsOf = (o: Obj): number => (Array.isArray(o.eval_results) ? o.eval_results.length : 0);
const isRole = (r: Obj) => 'overall_score' in r;
/** A record the simulator served failing the record rules (`malformed` kind `score`): it went to the quarantine. */
const isMalformed = (r: Obj) => r.score === 'high' || r.overall_score === 'high';

/** The records the simulator serves now, as served (the malformed ones left out: the quarantine holds them). */
async function servedRecords(s: RunningSimulator): Promise<Obj[]> {
  return (await served(s)).map((h) => h.record as Obj).filter((r) => !isMalformed(r));
}

/** What a forget --json should say, in the shape every kind answers. */
interface Expected {
  /** Results removed whole. */
  sessions: number;
  roles: number;
  /** Score details removed: those of the results removed, and theirs inside others' results. */
  details: number;
  evals: number;
  /** Others' results that held them (an NDJSON line rewritten; a table's score detail row removed, the result changed). */
  holding: number;
  /** Others' results that quote their e-mail as a value (rewritten, in every kind). */
  mentioned: number;
  /** Past versions removed (tables), or superseded NDJSON lines of the records removed. */
  versions: number;
  quarantined: number;
  /** Past versions of others' results kept without them (tables; counted in records_changed). */
  versionsChanged?: number;
}

/** What forgetting `p` takes from `records`: their results whole, their score details out of others' results. */
function erasureOf(records: Obj[], p: Person, copies: { versions?: number; quarantined?: number; mentioned?: number } = {}): Expected {
  const whole = records.filter((r) => isTheirs(r, p));
  const holding = records.filter((r) => !isTheirs(r, p) && detailsOf(r).some((d) => isTheirs(d, p)));
  const nested = holding.flatMap((r) => detailsOf(r).filter((d) => isTheirs(d, p)));
  const details = [...whole.flatMap(detailsOf), ...nested];
  return {
    sessions: whole.filter((r) => !isRole(r)).length,
    roles: whole.filter(isRole).length,
    details: details.length,
    evals: whole.filter((r) => !isRole(r)).reduce((n, r) => n + evalsOf(r), 0) + details.reduce((n, d) => n + evalsOf(d), 0),
    holding: holding.length,
    mentioned: copies.mentioned ?? 0,
    versions: copies.versions ?? 0,
    quarantined: copies.quarantined ?? 0,
  };
}

/**
 * Asserts the document's counts. A table keeps a score detail as a row of its own: theirs inside
 * another's result is removed as a row, and the result counts as changed (it is given again to
 * every --since-last consumer). An NDJSON line holds its record whole: theirs are removed as lines
 * (a superseded line too), another's is rewritten without them.
 */
function expectErased(kind: MirrorKind, doc: ForgetDoc, e: Expected): void {
  const quarantine = e.quarantined > 0 ? { quarantine: e.quarantined } : {};
  if (kind === 'ndjson') {
    expect(doc.removed).toEqual({
      session_results: 0,
      role_results: 0,
      score_details: 0,
      eval_results: 0,
      records_changed: 0,
      result_versions: 0,
      error_texts: 0,
      quarantined: e.quarantined,
    });
    expect(doc.copies).toEqual(quarantine);
    expect(doc.files.reduce((n, f) => n + f.lines, 0)).toBe(e.sessions + e.roles + e.versions);
    expect(doc.files.reduce((n, f) => n + f.changed, 0)).toBe(e.holding + e.mentioned);
    return;
  }
  expect(doc.removed).toEqual({
    session_results: e.sessions,
    role_results: e.roles,
    score_details: e.details,
    eval_results: e.evals,
    records_changed: e.mentioned + e.holding + (e.versionsChanged ?? 0),
    result_versions: e.versions,
    error_texts: 0,
    quarantined: e.quarantined,
  });
  expect(doc.copies).toEqual({ ...(e.versions > 0 ? { past_versions: e.versions } : {}), ...quarantine });
  expect(doc.files).toEqual([]);
}

/** The records the mirror holds, by id, as plain values. */
async function heldRecords(m: Mirror): Promise<Map<string, unknown>> {
  return new Map([...(await m.records())].map(([id, h]) => [id, h.record]));
}

const byId = (records: Obj[]) => new Map(records.map((r) => [String(r.id), r as unknown]));

/** Quarantined records naming `p`, as the mirror holds them now. */
async function quarantinedOf(m: Mirror, p: Person): Promise<number> {
  const rows = await m.state('SELECT raw FROM quarantine');
  return rows.filter((r) => String(r.raw).toLowerCase().includes(p.email.toLowerCase()) || String(r.raw).includes(p.id)).length;
}

/**
 * Serves result `index` of campaign `c` changed by `change`, as a service whose record holds another
 * candidate would. The simulator builds each record when asked: wrapping its data changes every
 * answer from then on (DETAILED role results only, for a role campaign).
 */
function serveChanged(s: RunningSimulator, c: Campaign, index: number, change: (record: Obj) => Obj): void {
  const data = s.data;
  if (c.type === 'SESSION_COMPLETION') {
    const sessionResult = data.sessionResult.bind(data);
    data.sessionResult = (campaign, i, created) => {
      const r = sessionResult(campaign, i, created);
      return campaign.id === c.id && i === index ? change(r) : r;
    };
    return;
  }
  const roleResult = data.roleResult.bind(data);
  data.roleResult = (campaign, i, report, created) => {
    const r = roleResult(campaign, i, report, created);
    return campaign.id === c.id && i === index && report === 'DETAILED' ? change(r) : r;
  };
}

/** A score detail of `p`: the record's first one, another id and candidate. */
function detailOf(record: Obj, p: Person, id: string): Obj {
  return { ...(detailsOf(record)[0] as Obj), id, user: { email: p.email, id: p.id } };
}

/** The documents of each case, by kind, for the comparison across kinds. */
const documents = new Map<string, Partial<Record<MirrorKind, ForgetDoc>>>();

function keep(step: string, kind: MirrorKind, doc: ForgetDoc): void {
  documents.set(step, { ...documents.get(step), [kind]: doc });
}

describe.each(MIRRORS)('forget (%s)', (kind) => {
  it('by e-mail in any case, then by id: every record of theirs goes with its details and evals; the rest stays as served', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const m = open(kind);
    await ok(m, s, 'pull');
    const records = await servedRecords(s);
    const a = userOf(s.data.roleResult(campaignOf(s, 'ROLE_SUBMISSION'), 3, 'DETAILED')) as Person;
    const b = records.map(userOf).find((u) => u !== undefined && u.id !== a.id) as Person;

    const byEmail = await forgetJson(m, s, '--user', a.email.toUpperCase());
    keep('by e-mail', kind, byEmail);
    expectErased(kind, byEmail, erasureOf(records, a));
    const left = records.filter((r) => !isTheirs(r, a));
    expect(await heldRecords(m)).toEqual(byId(left));
    expect(await m.holds(a.email)).toBe(false);
    expect(await m.holds(a.id)).toBe(false);

    const byUserId = await forgetJson(m, s, '--user', b.id);
    keep('by id', kind, byUserId);
    expectErased(kind, byUserId, erasureOf(left, b));
    expect(await heldRecords(m)).toEqual(byId(left.filter((r) => !isTheirs(r, b))));
    expect(await m.holds(b.email)).toBe(false);
    expect(await m.holds(b.id)).toBe(false);
    expect(await m.strays()).toBe(0);

    // Found nowhere now: a usage error, as a typo would be.
    const again = await m.run(s, 'forget', '--user', a.email);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no record of the candidate/);
  });

  it("inside another's DETAILED result: their score detail is taken out of it, the result otherwise kept as served", async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const role = campaignOf(s, 'ROLE_SUBMISSION');
    const host = s.data.roleResult(role, 4, 'DETAILED');
    // B: a candidate with results of their own, not the host's.
    const b = (await servedRecords(s)).map(userOf).find((u) => u !== undefined && u.id !== userOf(host)?.id) as Person;
    serveChanged(s, role, 4, (r) => ({
      ...r,
      score_details: [...detailsOf(r), detailOf(r, b, 'nested-detail-1'), detailOf(r, NESTED_ONLY, 'nested-detail-2')],
    }));
    const m = open(kind);
    await ok(m, s, 'pull');
    const records = await servedRecords(s);
    const hostId = String(host.id);
    expect(detailsOf(byId(records).get(hostId) as Obj).length).toBe(detailsOf(host).length + 2);

    const ofB = await forgetJson(m, s, '--user', b.email);
    keep('nested, by e-mail', kind, ofB);
    const e = erasureOf(records, b);
    expect(e.holding).toBe(1);
    expectErased(kind, ofB, e);
    const left = records.filter((r) => !isTheirs(r, b));
    const hostWithout = (p: Person) => (r: Obj) =>
      r.id === hostId ? { ...r, score_details: detailsOf(r).filter((d) => !isTheirs(d, p)) } : r;
    const now = left.map(hostWithout(b));
    expect(await heldRecords(m)).toEqual(byId(now));
    expect(await m.holds(b.email)).toBe(false);

    // Found only nested, by id: erased, not "no record"; the host is as the service served it before.
    const ofNested = await forgetJson(m, s, '--user', NESTED_ONLY.id);
    keep('nested only, by id', kind, ofNested);
    // The host's version the first erasure closed (it held them still) is kept without them too.
    expectErased(kind, ofNested, { ...erasureOf(now, NESTED_ONLY), versionsChanged: 1 });
    const after = await heldRecords(m);
    expect(after.get(hostId)).toEqual(host);
    expect(after).toEqual(byId(now.map(hostWithout(NESTED_ONLY))));
    expect(await m.holds(NESTED_ONLY.email)).toBe(false);
    expect(await m.strays()).toBe(0);
  });

  it("their e-mail as a value in another's result: [erased] there, in its text and in every column read from it", async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const session = campaignOf(s, 'SESSION_COMPLETION');
    const host = s.data.sessionResult(session, 2);
    const b = (await servedRecords(s)).map(userOf).find((u) => u !== undefined && u.id !== userOf(host)?.id) as Person;
    const named = (r: Obj, name: string) => ({ ...r, scenario: { ...(r.scenario as Obj), name } });
    serveChanged(s, session, 2, (r) => named(r, b.email));
    const m = open(kind);
    await ok(m, s, 'pull');
    const records = await servedRecords(s);

    const doc = await forgetJson(m, s, '--user', b.id);
    keep('mentioned', kind, doc);
    expectErased(kind, doc, erasureOf(records, b, { mentioned: 1 }));
    const hostId = String(host.id);
    const left = records.filter((r) => !isTheirs(r, b)).map((r) => (r.id === hostId ? named(r, '[erased]') : r));
    expect(await heldRecords(m)).toEqual(byId(left));
    if (kind !== 'ndjson')
      expect(await m.sql(`SELECT scenario_name FROM session_results WHERE id = '${hostId}'`)).toEqual([{ scenario_name: '[erased]' }]);
    expect(await m.holds(b.email)).toBe(false);
  });

  it('their copies go too: every past version of a record of theirs, and the quarantined records naming them', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS, malformed: { every: 7, kinds: ['score'] } });
    const m = open(kind);
    await ok(m, s, 'pull');
    const role = campaignOf(s, 'ROLE_SUBMISSION');
    const session = campaignOf(s, 'SESSION_COMPLETION');
    // P: the candidate of a result re-scored since, read again: its first version is a past one.
    const rescored = s.data.roleResult(role, 3, 'DETAILED');
    const p = userOf(rescored) as Person;
    // Q: the candidate of a quarantined record (session result 7 of 20, malformed).
    const q = userOf(s.data.sessionResult(session, 6)) as Person;
    expect(p.id).not.toBe(q.id);
    const answer = await fetch(`${s.url}/_simulator/results/${String(rescored.id)}/rescore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.apiKey}` },
    });
    expect(answer.status).toBe(200);
    const days = Math.ceil((Date.now() - Date.parse(String(rescored.created_at))) / 86_400_000) + 1;
    // Once anything changed the simulator serves its malformed records whole: this read stores them
    // too, and the quarantine keeps its copies (until a retry).
    await ok(m, s, 'pull', '--lookback', `${days}d`);
    const records = await servedRecords(s);

    const ofP = await forgetJson(m, s, '--user', p.id);
    keep('versions', kind, ofP);
    expectErased(kind, ofP, erasureOf(records, p, { versions: 1, quarantined: await quarantinedOf(m, p) }));
    if (kind !== 'ndjson') expect(await m.sql(`SELECT id FROM result_versions WHERE id = '${String(rescored.id)}'`)).toEqual([]);
    expect(await m.holds(p.email)).toBe(false);
    expect(await m.holds(String(rescored.id))).toBe(false);

    const quarantined = await quarantinedOf(m, q);
    expect(quarantined).toBeGreaterThan(0);
    const held = Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n);
    const left = records.filter((r) => !isTheirs(r, p));
    const ofQ = await forgetJson(m, s, '--user', q.email);
    keep('quarantined', kind, ofQ);
    expectErased(kind, ofQ, erasureOf(left, q, { quarantined }));
    expect(Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n)).toBe(held - quarantined);
    expect(await m.holds(q.email)).toBe(false);
    expect(await heldRecords(m)).toEqual(byId(left.filter((r) => !isTheirs(r, q))));
  });

  it('the quarantine is matched by who a record names, never by text: joann@ and a 7 elsewhere stay when ann@ and user 7 go', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS, malformed: { every: 7, kinds: ['score'] } });
    const session = campaignOf(s, 'SESSION_COMPLETION');
    const as = (user: Person, note?: string) => (r: Obj) => ({ ...r, user: { ...(r.user as Obj), ...user }, ...(note ? { note } : {}) });
    serveChanged(s, session, 0, as({ id: 'ann-9c41', email: 'ann@example.com' }));
    serveChanged(s, session, 1, as({ id: '7', email: 'seven@example.com' }));
    // Quarantined (malformed): joann's, and one whose text holds 7s that are no id of anybody's.
    serveChanged(s, session, 6, as({ id: 'jo-0002', email: 'joann@example.com' }));
    serveChanged(s, session, 13, as({ id: 'other-0017', email: 'other7@example.com' }, 'room 7, floor 17'));
    const m = open(kind);
    await ok(m, s, 'pull');
    const count = async () => Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n);
    const held = await count();
    expect(held).toBeGreaterThanOrEqual(2);
    expect(await m.holds('joann@example.com')).toBe(true);

    const ofAnn = await forgetJson(m, s, '--user', 'ann@example.com');
    expect(ofAnn.copies.quarantine ?? 0).toBe(0);
    expect(await count()).toBe(held);
    expect(await m.holds('joann@example.com')).toBe(true);
    expect(await m.holds('ann-9c41')).toBe(false);

    const ofSeven = await forgetJson(m, s, '--user', '7');
    expect(ofSeven.copies.quarantine ?? 0).toBe(0);
    expect(await count()).toBe(held);
    expect(await m.holds('seven@example.com')).toBe(false);
    expect(await m.holds('other7@example.com')).toBe(true);
  });

  it("drift's examples: a record forget took out is no longer an example; the paths and values stay", async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 12, growth: { count: 3, windowMs: 60_000 }, now: () => now });
    const m = open(kind);
    await ok(m, s, 'pull');
    s.quirks.drift = true;
    now += 60_000;
    await ok(m, s, 'pull');
    const stored = await m.state('SELECT kind, value, record_id FROM drift_seen');
    const onHold = stored.find((r) => r.value === 'ON_HOLD');
    expect(onHold).toBeDefined();
    const records = await servedRecords(s);
    const p = userOf(byId(records).get(String(onHold?.record_id))) as Person;
    const theirs = new Set(records.filter((r) => isTheirs(r, p)).map((r) => String(r.id)));

    const doc = await forgetJson(m, s, '--user', p.email);
    keep('drift', kind, doc);
    expectErased(kind, doc, erasureOf(records, p));
    const after = await m.state('SELECT kind, value, record_id FROM drift_seen');
    expect(after.length).toBe(stored.length);
    expect(after.filter((r) => theirs.has(String(r.record_id)))).toEqual([]);
    expect(after.filter((r) => r.value === 'ON_HOLD').map((r) => r.record_id)).toEqual(['(erased)']);
    expect(await m.holds(p.email)).toBe(false);
  });

  it('--older-than: the results dated before the cut go with their details, past versions and quarantined copies; the younger stay', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS, malformed: { every: 6, kinds: ['score'] } });
    const m = open(kind);
    await ok(m, s, 'pull');
    const cut = cutOf(servedResults(s, RECORDS));
    const dated = (r: { created_at?: unknown }) => Date.parse(String(r.created_at)) < cut.at;
    // The quarantine's copies, dated by their records.
    const copies = (await m.state('SELECT raw FROM quarantine')).map((r) => JSON.parse(String(r.raw)) as Obj);
    const oldCopies = copies.filter(dated).length;
    expect(oldCopies).toBeGreaterThan(0);
    expect(copies.length).toBeGreaterThan(oldCopies);

    // An old result re-scored and read again: its first version is a past one, which goes with it.
    const rescored = s.data.roleResult(campaignOf(s, 'ROLE_SUBMISSION'), 1, 'DETAILED');
    expect(dated(rescored)).toBe(true);
    const answer = await fetch(`${s.url}/_simulator/results/${String(rescored.id)}/rescore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.apiKey}` },
    });
    expect(answer.status).toBe(200);
    const days = Math.ceil((Date.now() - Date.parse(String(rescored.created_at))) / 86_400_000) + 1;
    await ok(m, s, 'pull', '--lookback', `${days}d`);
    const records = await servedRecords(s);
    const old = records.filter(dated);

    const doc = await forgetJson(m, s, '--older-than', cut.duration(), '--yes');
    keep('older than', kind, doc);
    const details = old.flatMap(detailsOf);
    expectErased(kind, doc, {
      sessions: old.filter((r) => !isRole(r)).length,
      roles: old.filter(isRole).length,
      details: details.length,
      evals: old.filter((r) => !isRole(r)).reduce((n, r) => n + evalsOf(r), 0) + details.reduce((n, d) => n + evalsOf(d), 0),
      holding: 0,
      mentioned: 0,
      versions: 1,
      quarantined: oldCopies,
    });
    expect(await heldRecords(m)).toEqual(byId(records.filter((r) => !dated(r))));
    const left = (await m.state('SELECT raw FROM quarantine')).map((r) => JSON.parse(String(r.raw)) as Obj);
    expect(left.filter(dated)).toEqual([]);
    expect(left.length).toBe(copies.length - oldCopies);
    for (const r of old) expect(await m.holds(String(r.id)), String(r.id)).toBe(false);
    expect(await m.strays()).toBe(0);
  });
});

describe('forget --json across kinds', () => {
  it('the kinds with tables answer each case with the same counts; NDJSON the same quarantine and error texts', () => {
    for (const [step, docs] of documents) {
      const [first, ...others] = (['sqlite', 'postgres'] as const).flatMap((k) => (docs[k] === undefined ? [] : [docs[k]]));
      for (const other of others) {
        expect({ removed: other.removed, copies: other.copies }, step).toEqual({ removed: first?.removed, copies: first?.copies });
      }
      const ndjson = docs.ndjson;
      if (first === undefined || ndjson === undefined) continue;
      expect([ndjson.removed.quarantined, ndjson.removed.error_texts], step).toEqual([
        first.removed.quarantined,
        first.removed.error_texts,
      ]);
    }
  });
});
