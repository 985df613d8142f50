/**
 * The audit trail's contract, on SQLite, NDJSON and PostgreSQL alike (./mirrors.ts says how to add a
 * case): result_versions and `export --as-of`, the quarantine and its retry, drift under
 * `--contract strict` and in status. The simulator's control routes and quirks change what it
 * serves, as a user rehearsing would.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { driftOf } from '../helpers/drift.js';
import { cutOf, servedResults } from '../helpers/history.js';
import { get, sim } from '../helpers/index.js';
import { MIRRORS, type Mirror, ok, open, unsupported } from './mirrors.js';

type Campaign = RunningSimulator['data']['campaigns'][number];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function change(s: RunningSimulator, id: string, what: 'rescore' | 'delete'): Promise<void> {
  const r = await fetch(`${s.url}/_simulator/results/${id}/${what}`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}` } });
  expect(r.status, await r.text()).toBe(200);
}

/** NDJSON lines by id, each line's `raw` (export embeds it as a JSON value). */
function rawById(stdout: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const line of stdout.split('\n').filter((l) => l !== '')) {
    const row = JSON.parse(line) as { id: string; raw: unknown };
    out.set(row.id, row.raw);
  }
  return out;
}

function campaignOf(s: RunningSimulator, type: Campaign['type']): Campaign {
  const c = s.data.campaigns.find((x) => x.type === type);
  if (!c) throw new Error(`the simulator serves no ${type} campaign`);
  return c;
}

/** Records the mirror holds now for campaign `c`. */
async function heldOf(m: Mirror, c: Campaign): Promise<number> {
  return [...(await m.records()).values()].filter((r) => r.campaign_id === c.id).length;
}

/** Every stored copy of campaign `c`'s records (an NDJSON file's every line). */
async function rowsOf(m: Mirror, c: Campaign): Promise<number> {
  return (await m.rows()).filter((r) => r.campaign_id === c.id).length;
}

const QUARANTINE_RECORDS = 250;
/** Every 50th record malformed, no id then a score that is a word, in turn: 49, 99, 149, 199, 249. */
const MALFORMED = { every: 50, kinds: ['id', 'score'] as const };

const RETENTION_RECORDS = 20;

describe.each(MIRRORS)('the audit trail (%s)', (kind) => {
  it('versions: two re-scores and a delete keep 3 and 2 versions, and export --as-of gives the mirror at each moment', async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    const s = await sim({ campaigns: 2, records: 12 });
    const m = open(kind);
    const snapshot = async (...asOf: string[]) => ({
      role: rawById((await ok(m, s, 'export', '--table', 'role-results', '--format', 'ndjson', ...asOf)).stdout),
      session: rawById((await ok(m, s, 'export', '--table', 'session-results', '--format', 'ndjson', ...asOf)).stdout),
    });
    const asOf = (at: string) => snapshot('--as-of', at);
    /** A moment strictly after everything committed so far and strictly before anything later. */
    const moment = async () => {
      await sleep(5);
      const at = new Date().toISOString();
      await sleep(5);
      return at;
    };
    const versionsOf = (id: string) =>
      m.sql(`SELECT version, deleted, valid_from, valid_to, request_id FROM result_versions WHERE id = '${id}' ORDER BY version`);
    const rescored = s.data.roleResult(campaignOf(s, 'ROLE_SUBMISSION'), 3, 'DETAILED');
    const deleted = s.data.sessionResult(campaignOf(s, 'SESSION_COMPLETION'), 5);
    const user = rescored.user as { email: string; id: string };

    // The results pages the simulator answered during each command, each with its x-request-id.
    const pagesOf = async (command: string, ...args: string[]) => {
      const from = s.stats.recentAnswers.length;
      await ok(m, s, command, ...args);
      return s.stats.recentAnswers.slice(from).filter((a) => a.status === 200 && a.path.includes('/results?'));
    };
    /** The request id of the one page of campaign `c` among `pages` that `pick` keeps. */
    const pageOf = (pages: Awaited<ReturnType<typeof pagesOf>>, c: Campaign, pick = (_path: string) => true) => {
      const mine = pages.filter((a) => a.path.includes(`campaign_id=${c.id}&`) && pick(a.path));
      expect(
        mine.map((a) => a.path),
        c.id,
      ).toHaveLength(1);
      return mine[0]?.requestId;
    };
    const pages0 = await pagesOf('pull');
    const t0 = await moment();
    const at0 = await snapshot();
    await change(s, rescored.id as string, 'rescore');
    // A lookback that reaches the rescored record (the service's times are the simulator's).
    const days = Math.ceil((Date.now() - Date.parse(String(rescored.created_at))) / 86_400_000) + 1;
    const pages1 = await pagesOf('pull', '--lookback', `${days}d`);
    const t1 = await moment();
    const at1 = await snapshot();
    await change(s, rescored.id as string, 'rescore');
    const pages2 = await pagesOf('reconcile');
    const t2 = await moment();
    const at2 = await snapshot();
    await change(s, deleted.id as string, 'delete');
    await ok(m, s, 'reconcile', '--prune');
    const t3 = await moment();
    const at3 = await snapshot();

    // The service's changes reached the mirror: three scores of one record, one record gone.
    const score = (at: typeof at0) => (at.role.get(rescored.id as string) as { overall_score: number }).overall_score;
    expect(new Set([score(at0), score(at1), score(at2)]).size).toBe(3);
    expect(at2.session.has(deleted.id as string)).toBe(true);
    expect(at3.session.has(deleted.id as string)).toBe(false);

    const a = await versionsOf(rescored.id as string);
    expect(a.map((v) => Number(v.version))).toEqual([1, 2, 3]);
    expect(a.map((v) => v.valid_to === null)).toEqual([false, false, true]);
    const d = await versionsOf(deleted.id as string);
    expect(d.map((v) => [Number(v.version), Boolean(Number(v.deleted))])).toEqual([
      [1, false],
      [2, true],
    ]);
    // Each version keeps the x-request-id of the page that brought it (--lookback's re-read, not its
    // incremental read, brought version 2); a deletion was brought by no page.
    const roles = campaignOf(s, 'ROLE_SUBMISSION');
    const sessions = campaignOf(s, 'SESSION_COMPLETION');
    expect(a.map((v) => v.request_id)).toEqual([
      pageOf(pages0, roles),
      pageOf(pages1, roles, (path) => path.includes('start_date=')),
      pageOf(pages2, roles),
    ]);
    expect(d.map((v) => v.request_id)).toEqual([pageOf(pages0, sessions), null]);
    // Each version ends where the next begins.
    for (const vs of [a, d]) for (let i = 1; i < vs.length; i++) expect(String(vs[i - 1]?.valid_to)).toBe(String(vs[i]?.valid_from));

    for (const [at, then] of [
      [t0, at0],
      [t1, at1],
      [t2, at2],
      [t3, at3],
    ] as const) {
      expect(await asOf(at), at).toEqual(then);
    }
    // Before the first pull the mirror held nothing; a time to come is now.
    const before = await asOf('2000-01-01');
    expect(before.role.size + before.session.size).toBe(0);
    expect(await asOf('2999-01-01T00:00:00Z')).toEqual(at3);

    // An unchanged re-read adds no version.
    const count = async () => (await m.sql('SELECT count(*) AS n FROM result_versions'))[0]?.n;
    const past = await m.sql('SELECT count(*) AS n FROM past_versions');
    const n = await count();
    await ok(m, s, 'reconcile');
    await ok(m, s, 'pull', '--full');
    expect(await count()).toBe(n);
    expect(await m.sql('SELECT count(*) AS n FROM past_versions')).toEqual(past);

    const h = JSON.parse((await ok(m, s, 'history', '--user', user.email.toUpperCase(), '--json')).stdout) as {
      versions: Array<{
        record_id: string;
        version: number;
        score: number;
        valid_from: string;
        deleted: boolean;
        request_id: string | null;
      }>;
    };
    const mine = h.versions.filter((v) => v.record_id === rescored.id);
    expect(mine.map((v) => v.version)).toEqual([1, 2, 3]);
    expect(mine.map((v) => v.request_id)).toEqual(a.map((v) => v.request_id));
    expect(mine.map((v) => v.score)).toEqual([score(at0), score(at1), score(at2)]);
    expect(h.versions.every((v) => v.valid_from <= t3)).toBe(true);
    const text = await ok(m, s, 'history', '--user', user.id);
    expect(text.stdout).toContain(String(score(at1)));
    const gone = JSON.parse((await ok(m, s, 'history', '--record', deleted.id as string, '--json')).stdout) as {
      versions: Array<{ version: number; deleted: boolean; request_id: string | null }>;
    };
    expect(gone.versions.map((v) => v.request_id)).toEqual(d.map((v) => v.request_id));
    expect(gone.versions.map((v) => [v.version, v.deleted])).toEqual([
      [1, false],
      [2, true],
    ]);

    // forget erases the person's versions with their rows; their deleted record's versions too.
    const deletedUser = (deleted.user as { id: string }).id;
    await ok(m, s, 'forget', '--user', user.email);
    await ok(m, s, 'forget', '--user', deletedUser);
    expect(await versionsOf(rescored.id as string)).toEqual([]);
    expect(await versionsOf(deleted.id as string)).toEqual([]);
    const after = await m.run(s, 'history', '--user', user.email);
    expect(after.code).toBe(2);
  });

  it('quarantine: 2 bad records of a page of 100 kept apart byte-exact, the 98 others stored, the stream goes on to its end', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: QUARANTINE_RECORDS, malformed: MALFORMED });
    const m = open(kind);
    const c = campaignOf(s, 'SESSION_COMPLETION');
    const pull = await m.run(s, 'pull', '--campaign', c.id, '--page-size', '100', '--json');
    expect(pull.code, pull.stderr).toBe(0);
    // One warning for the stream (5 records across its pages), naming the campaign.
    expect(pull.stderr).toBe(
      `warning: ${c.name} (session): 5 records failed the record rules and went to the quarantine (id: 3, score: 2); the stream went on: \`campaign-sync quarantine list\` shows them\n`,
    );
    const doc = JSON.parse(pull.stdout) as { streams: Array<{ status: string; cursor: string; records: number }> };
    expect(doc.streams[0]?.status).toBe('ok');
    // The checkpoint is the stream's end: the last record is malformed (no id) but its page's envelope names it.
    expect(doc.streams[0]?.cursor).toBe(String(s.data.orderIndex(c, QUARANTINE_RECORDS - 1)));
    expect(await heldOf(m, c)).toBe(QUARANTINE_RECORDS - 5);
    const held = await m.state('SELECT stream, record_id, raw, reason, request_id, page_position FROM quarantine ORDER BY id');
    expect(held.length).toBe(5);
    // Page 1, exactly as served: the bytes of the body the simulator answers with.
    const page1 = await get(s, `/v1/campaigns/session/results?campaign_id=${c.id}&sort=asc&limit=100`);
    const [first, second] = held;
    expect(page1.text.includes(first?.raw as string)).toBe(true);
    expect(page1.text.includes(second?.raw as string)).toBe(true);
    expect(first?.raw).toMatch(/^\{.*\}$/s);
    const noId = JSON.parse(first?.raw as string) as Record<string, unknown>;
    expect(noId.id).toBeUndefined();
    expect(noId.order_index).toBe(Number(s.data.orderIndex(c, 49)));
    expect(first?.reason).toMatch(
      /^id: missing is not a usable id \(a string of 1 to 200 characters, without U\+0000 or a lone surrogate\) — record 50 of 100, page 1, GET /,
    );
    expect(first?.page_position).toBe(50);
    expect(typeof first?.request_id).toBe('string');
    expect((JSON.parse(second?.raw as string) as { score: unknown }).score).toBe('high');
    expect(second?.record_id).toBe(s.data.sessionResult(c, 99).id);
    expect(second?.reason).toMatch(/^score: "high" is not a number — record 100 of 100 \(id [^)]+\), page 1, GET /);
    // A second pull adds nothing, to the mirror or to the quarantine.
    const again = await m.run(s, 'pull', '--campaign', c.id, '--full', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n)).toBe(5);
  });

  it('quarantine: status counts them per stream, --check warns; retry stores them once the service serves them whole', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: QUARANTINE_RECORDS, malformed: MALFORMED });
    const m = open(kind);
    const c = campaignOf(s, 'SESSION_COMPLETION');
    expect((await m.run(s, 'pull', '--campaign', c.id)).code).toBe(0);
    const status = await m.run(s, 'status', '--json');
    expect(status.code, status.stderr).toBe(0);
    const streams = (JSON.parse(status.stdout) as { streams: Array<{ campaign_id: string; quarantined: number }> }).streams;
    expect(streams.find((x) => x.campaign_id === c.id)?.quarantined).toBe(5);
    const check = await m.run(s, 'status', '--check');
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/warning: .*5 records in the quarantine/);
    const list = await m.run(s, 'quarantine', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { quarantined: unknown[] }).quarantined.length).toBe(5);

    // Still malformed: nothing stored, nothing released.
    const early = await m.run(s, 'quarantine', 'retry', '--json');
    expect(early.code, early.stderr).toBe(0);
    expect((JSON.parse(early.stdout) as { stored: number[] }).stored).toEqual([]);
    expect(early.stderr).toMatch(/still fails/);

    s.malformed.fix();
    const retry = await m.run(s, 'quarantine', 'retry', '--json');
    expect(retry.code, retry.stderr).toBe(0);
    const done = JSON.parse(retry.stdout) as { stored: number[]; kept: unknown[]; requests: number };
    expect(done.stored.length).toBe(5);
    expect(done.kept).toEqual([]);
    // One request per page that held them (pages of 100: 3).
    expect(done.requests).toBe(3);
    expect(await heldOf(m, c)).toBe(QUARANTINE_RECORDS);
    expect(Number((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n)).toBe(0);
    const after = await m.run(s, 'status', '--check');
    expect(after.stdout).not.toMatch(/quarantine/);
  });

  it('drift: a new field and a new recommendation_status: --contract strict stores nothing (exit 4); then reported once by status', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 30, growth: { count: 5, windowMs: 60_000 }, now: () => now });
    const m = open(kind);
    const role = campaignOf(s, 'ROLE_SUBMISSION');
    const session = campaignOf(s, 'SESSION_COMPLETION');
    const pull = (...extra: string[]) => m.run(s, 'pull', '--json', ...extra);
    const statusDoc = async () => driftOf(await m.run(s, 'status', '--json'));
    const cursors = async () => (await m.state('SELECT stream, cursor FROM sync_state ORDER BY stream')).map((r) => String(r.cursor));

    expect((await pull()).code).toBe(0);
    // The first pass is the baseline: it records everything and reports nothing.
    expect(await statusDoc()).toEqual([]);
    now += 60_000;
    expect((await pull()).code).toBe(0);
    expect(await statusDoc()).toEqual([]);

    s.quirks.drift = true;
    now += 60_000;
    const before = { cursors: await cursors(), roles: await rowsOf(m, role) };
    const strict = await pull('--contract', 'strict');
    expect(strict.code).toBe(4);
    const doc = JSON.parse(strict.stdout) as { streams: Array<{ campaign_id: string; status: string; error: string }> };
    const failed = new Map(doc.streams.map((x) => [x.campaign_id, x]));
    const firstRole = s.data.roleResult(role, 35, 'DETAILED').id as string;
    const firstSession = s.data.sessionResult(session, 35).id as string;
    expect(failed.get(role.id)?.status).toBe('failed');
    expect(failed.get(role.id)?.error).toContain(`record "${firstRole}" brings a new recommendation_status value ON_HOLD`);
    expect(failed.get(role.id)?.error).toContain('--contract strict: nothing of this page was stored');
    expect(failed.get(session.id)?.error).toContain(`record "${firstSession}" brings a new field assessment_version`);
    expect(await cursors()).toEqual(before.cursors);
    expect(await rowsOf(m, role)).toBe(before.roles);
    // The refused page recorded nothing either: the next status has nothing to say.
    expect(await statusDoc()).toEqual([]);

    // By default (warn) the pass stores it, and status reports it once.
    const again = await pull();
    expect(again.code).toBe(0);
    expect(await rowsOf(m, role)).toBe(before.roles + 5);
    const changes = await statusDoc();
    const shown = changes.map((c) => [c.stream.includes('/role/') ? 'role' : 'session', c.change, c.kind, c.value, c.record_id]);
    expect(shown.sort()).toEqual(
      [
        ['role', 'appeared', 'field', 'assessment_version', firstRole],
        ['role', 'appeared', 'recommendation_status', 'ON_HOLD', firstRole],
        ['session', 'appeared', 'field', 'assessment_version', firstSession],
      ].sort(),
    );
    expect(await statusDoc()).toEqual([]);
    // The same in people's words, once.
    now += 60_000;
    expect((await pull()).code).toBe(0);
    const plain = await m.run(s, 'status');
    expect(plain.stdout).not.toContain('drift:');

    // Nothing personal is ever an enumeration value or a path: the ids are record ids.
    const stored = await m.state('SELECT kind, value, record_id FROM drift_seen');
    expect(stored.length).toBeGreaterThan(20);
    expect(stored.filter((r) => `${r.value}${r.record_id}`.includes('@'))).toEqual([]);
    expect(stored.map((r) => r.value)).toContain('score_details[].eval_results[].skill.key');
    expect(stored.filter((r) => r.kind === 'skill').length).toBeGreaterThan(3);

    // forget is unaffected: the person and their record go, the drift stays (its example erased).
    const email = (s.data.roleResult(role, 35, 'DETAILED').user as { email: string }).email;
    const forget = await m.run(s, 'forget', '--user', email);
    expect(forget.code).toBe(0);
    const after = await m.state('SELECT kind, value, record_id FROM drift_seen');
    expect(after.length).toBe(stored.length);
    expect(after.filter((r) => r.record_id === firstRole)).toEqual([]);
    expect(after.filter((r) => r.value === 'ON_HOLD').map((r) => r.record_id)).toEqual(['(erased)']);
  });

  it('retention: forget --older-than removes the older results and their child rows; the younger stay; pulls bring none back', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RETENTION_RECORDS });
    const m = open(kind);
    await ok(m, s, 'pull');
    const cut = cutOf(servedResults(s, RETENTION_RECORDS));
    expect(cut.old.length).toBeGreaterThan(3);
    const oldDetails = cut.old.flatMap((r) => r.details);
    expect(oldDetails.length).toBeGreaterThan(0);
    const before = await m.records();
    // The child rows, whole, of the kinds with tables (an NDJSON line holds its record's whole).
    const children = async () =>
      kind === 'ndjson'
        ? []
        : [...(await m.sql('SELECT * FROM score_details')), ...(await m.sql('SELECT * FROM eval_results'))]
            .map((c) => JSON.stringify(c))
            .sort();
    const childrenBefore = await children();

    const r = await ok(m, s, 'forget', '--older-than', cut.duration(), '--yes', '--json');
    const doc = JSON.parse(r.stdout) as {
      removed: { session_results: number; role_results: number; score_details: number };
      files?: Array<{ lines: number }>;
    };
    // An NDJSON mirror counts the lines it took out of its files (a record's details are in its line).
    if (kind === 'ndjson') expect(doc.files?.reduce((n, f) => n + f.lines, 0)).toBe(cut.old.length);
    else {
      expect(doc.removed.session_results + doc.removed.role_results).toBe(cut.old.length);
      expect(doc.removed.score_details).toBe(oldDetails.length);
    }

    const oldIds = new Set(cut.old.map((o) => o.id));
    const expected = new Map([...before].filter(([id]) => !oldIds.has(id)));
    expect(await m.records()).toEqual(expected);
    const gone = [...oldIds, ...oldDetails];
    expect(await children()).toEqual(childrenBefore.filter((c) => !gone.some((id) => c.includes(`"${id}"`))));
    for (const { id } of cut.young) expect((await m.records()).has(id), id).toBe(true);
    // Nothing left that names an old result (a dangling child row, a stray text).
    expect(await m.strays()).toBe(0);
    const everything = JSON.stringify(await m.rows());
    for (const id of gone) expect(everything.includes(id), id).toBe(false);

    // The checkpoints stay past them; a --full with the retention stores none of them either.
    const next = await ok(m, s, 'pull', '--json');
    expect(JSON.parse(next.stdout).records).toBe(0);
    await ok(m, s, 'pull', '--full', '--retention', cut.duration());
    expect(await m.records()).toEqual(expected);
    expect(await children()).toEqual(childrenBefore.filter((c) => !gone.some((id) => c.includes(`"${id}"`))));
  });
});
