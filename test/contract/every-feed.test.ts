/**
 * Every table and view has a `--since-last` feed (./mirrors.ts says how to add a case): a warehouse
 * fed only by the feeds of every exportable table and view, loaded as docs/commands.md says (a feed of
 * rows by id; a feed of rows that belong to results by deleting the rows of each result a deletion row
 * names, then inserting the rows given), through re-scores, late arrivals, reconcile --prune, `forget
 * --user` of a candidate found inside another's record, and a retention, holds after every round
 * exactly what a full export of each table and view gives. A deletion row names nobody; a result
 * erased reaches the consumer of a child table before its id goes; a `--columns` list without a
 * feed's key is refused.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { EXPORT_TABLES, type ExportTable, FEEDS, RESULT_ID_COLUMN } from '../../src/store/model/export-tables.js';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim, tempDir } from '../helpers/index.js';
import { campaignOf, ndjson, nestCandidate, type Row } from './feed-setup.js';
import { MIRRORS, type Mirror, ok, open, unsupported } from './mirrors.js';

const RECORDS = 16;
const TABLES = Object.keys(EXPORT_TABLES) as ExportTable[];
const DELETION = ['_deleted_at', '_deleted_reason'];

/** Rows as a sorted list of their JSON texts: a table's contents, whatever its order. */
const contents = (rows: Row[]) => rows.map((r) => JSON.stringify(r, Object.keys(r).sort())).sort();

/** Whether a kept row is one a deletion row's key names. */
function named(key: readonly string[], deletion: Row, row: Row): boolean {
  return key.every((k) => row[k] === deletion[k]);
}

/** What one round of the warehouse's loads received, per table. */
type Received = Record<ExportTable, { changed: Row[]; deleted: Row[] }>;

/**
 * A warehouse loaded only from `--since-last` files of consumer `bi`, one per table and view:
 * `round()` loads what changed in each, then compares each with a full export of the mirror.
 */
function warehouse(m: Mirror, s: RunningSimulator) {
  const dir = tempDir();
  const tables = new Map<ExportTable, Row[]>(TABLES.map((t) => [t, []]));
  let n = 0;
  const exported = async (table: string, ...flags: string[]) => {
    const out = join(dir, `${table}-${n++}.ndjson`);
    await ok(m, s, 'export', '--table', table, '--format', 'ndjson', '-o', out, '--quiet', ...flags);
    return ndjson(out);
  };
  const load = (table: ExportTable, rows: Row[]) => {
    const feed = FEEDS[table];
    let copy = tables.get(table) as Row[];
    const deleted = rows.filter((r) => r._deleted_reason !== null);
    const changed = rows.filter((r) => r._deleted_reason === null);
    // Every deletion row comes before every other row.
    expect(rows.slice(0, deleted.length)).toEqual(deleted);
    for (const d of deleted) copy = copy.filter((r) => !named(feed.key, d, r));
    for (const r of changed) {
      const { _deleted_at, _deleted_reason, ...row } = r;
      expect(_deleted_at).toBeNull();
      // A feed of rows replaces the row of its id; one of results inserts (its result's rows went first).
      if (feed.kind === 'rows') copy = copy.filter((x) => x.id !== row.id);
      copy.push(row);
    }
    tables.set(table, copy);
    return { changed, deleted };
  };
  return {
    async round(): Promise<Received> {
      const got = {} as Received;
      for (const table of TABLES) {
        got[table] = load(table, await exported(table, '--since-last', 'bi'));
        const held = (tables.get(table) as Row[]).map(({ [RESULT_ID_COLUMN]: _, ...row }) => row);
        expect(contents(held), `${table}: the warehouse equals the mirror`).toEqual(contents(await exported(table)));
      }
      return got;
    },
  };
}

/**
 * Asserts a deletion row of `table` says which rows go, when and why, and nothing else: the feed's
 * key (a results table's: the id, and for a pruned one its campaign).
 */
function expectNamesNobody(table: ExportTable, row: Row, reasons: string[]): void {
  expect(reasons).toContain(row._deleted_reason);
  expect(Number.isNaN(Date.parse(String(row._deleted_at)))).toBe(false);
  const said = Object.keys(row).filter((k) => row[k] !== null);
  const key: string[] = [...FEEDS[table].key, ...(FEEDS[table].kind === 'rows' && row._deleted_reason === 'pruned' ? ['campaign_id'] : [])];
  expect(said.sort()).toEqual([...key, ...DELETION].sort());
}

describe.each(MIRRORS)('every table and view has a --since-last feed (%s)', (kind) => {
  it('a warehouse fed by the feeds of every table and view equals the mirror after every round; deletion rows name nobody', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    // B: a candidate with a session result of their own, whose score detail the host's result holds too.
    const { role, session, host, own, b } = nestCandidate(s);
    // A late record of record 5's candidate: it is their latest result once it arrives.
    const sessionResult = s.data.sessionResult.bind(s.data);
    s.data.sessionResult = (c, i, created) => {
      const r = sessionResult(c, i, created) as Row;
      return c.id === session.id && i >= 1_000_000_000 ? { ...r, user: (sessionResult(session, 5) as Row).user } : r;
    };
    const m = open(kind);
    await ok(m, s, 'pull');
    const wh = warehouse(m, s);
    const first = await wh.round();
    for (const t of TABLES) {
      expect(first[t].changed.length, t).toBeGreaterThan(0);
      expect(first[t].deleted, t).toEqual([]);
    }

    // Re-scores and late arrivals: a changed role result gives its score details and eval results again.
    s.changes.rescore(session, 2, Date.now());
    s.changes.rescore(role, 3, Date.now());
    s.changes.arriveLate(session, 3, Date.now());
    await ok(m, s, 'pull', '--full');
    const rescored = await wh.round();
    const rescoredRole = String(s.data.roleResult(role, 3, 'DETAILED').id);
    expect(rescored['score-details'].deleted.map((r) => [r.role_result_id, r._deleted_reason])).toContainEqual([rescoredRole, 'replaced']);
    expect(rescored['score-details'].changed.every((r) => r.role_result_id === rescoredRole)).toBe(true);
    // Only what changed: not every row again.
    expect(rescored['eval-results'].changed.length).toBeLessThan(first['eval-results'].changed.length);
    // The late record is its candidate's latest now: the one before it leaves latest_results.
    const before = String(s.data.sessionResult(session, 5).id);
    expect(rescored.latest_results.deleted.map((r) => r.result_id)).toContain(before);
    expect(rescored.latest_results.changed.map((r) => r.result_id)).not.toContain(before);

    // The service deletes a result, reconcile --prune follows.
    // A candidate's latest result goes: their result before it is the latest again, though it did not change.
    const time = (v: unknown) => new Date(v as string).getTime();
    const held = await m.sql("SELECT result_id, candidate_id, created_at FROM results WHERE kind = 'session'");
    const theirs = (i: number) =>
      held
        .filter((r) => r.candidate_id === (s.data.sessionResult(session, i).user as { id: string }).id)
        .sort((x, y) => time(y.created_at) - time(x.created_at));
    const gone = [...Array(RECORDS).keys()].find(
      (i) => i !== 6 && theirs(i).length > 1 && theirs(i)[0]?.result_id === s.data.sessionResult(session, i).id,
    );
    if (gone === undefined) throw new Error('no candidate has two session results');
    const stays = String(theirs(gone)[1]?.result_id);
    const removed = String(s.data.sessionResult(session, gone).id);
    s.changes.remove(session, gone);
    await ok(m, s, 'reconcile', '--prune');
    const pruned = await wh.round();
    expect(pruned['eval-results'].deleted.map((r) => [r.parent_type, r[RESULT_ID_COLUMN], r._deleted_reason])).toEqual([
      ['session_result', removed, 'pruned'],
    ]);
    for (const t of TABLES) for (const r of pruned[t].deleted) expectNamesNobody(t, r, ['pruned', 'replaced']);
    expect(pruned.latest_results.changed.map((r) => r.result_id)).toContain(stays);

    // forget B: their own result's rows go by a deletion row; the host's result, rewritten without them, comes again whole.
    await ok(m, s, 'forget', '--user', b.email);
    const erased = await wh.round();
    expect(erased['score-details'].deleted.map((r) => [r.role_result_id, r._deleted_reason])).toEqual([[host.id, 'replaced']]);
    expect(erased['score-details'].changed.map((r) => r.id)).not.toContain('nested-detail-b');
    expect(erased.skill_scores.deleted.map((r) => [r.kind, r.result_id, r._deleted_reason])).toContainEqual(['session', own.id, 'erased']);
    for (const t of TABLES) {
      for (const r of erased[t].deleted) expectNamesNobody(t, r, ['erased', 'replaced']);
      expect(JSON.stringify(erased[t].deleted), t).not.toContain(b.id);
      expect(JSON.stringify(erased[t]).toLowerCase(), t).not.toContain(b.email.toLowerCase());
    }
    // Every feed read it: no erased id is kept for any of them.
    expect(await m.holds(String(own.id))).toBe(false);

    // A retention: the rows of every result dated before the cut go by deletion rows.
    const cut = cutOf(servedResults(s, RECORDS));
    await ok(m, s, 'forget', '--older-than', cut.duration(), '--yes');
    const retained = await wh.round();
    expect(retained['eval-results'].deleted.length).toBeGreaterThan(0);
    for (const t of TABLES) for (const r of retained[t].deleted) expectNamesNobody(t, r, ['retention', 'replaced']);

    // A campaign renamed: the views give its results again, with the name.
    session.name = 'Renamed campaign';
    role.name = 'Renamed role campaign';
    await ok(m, s, 'pull');
    const renamed = await wh.round();
    const all = await m.sql('SELECT count(*) AS n FROM results');
    expect(renamed.results.changed.length).toBe(Number(all[0]?.n));
    expect(renamed.skill_scores.changed.every((r) => String(r.campaign_name).startsWith('Renamed'))).toBe(true);
    expect(renamed['score-details'].changed).toEqual([]);

    // Nothing changed since: no row again, but campaigns (given whole every time).
    const quiet = await wh.round();
    for (const t of TABLES) if (t !== 'campaigns') expect(quiet[t], t).toEqual({ changed: [], deleted: [] });
  }, 300_000);

  it("a result erased reaches a consumer of score details alone before its id goes; each feed's place is its own", async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 6 });
    const role = campaignOf(s, 'ROLE_SUBMISSION');
    const m = open(kind);
    await ok(m, s, 'pull');
    const dir = tempDir();
    let n = 0;
    const since = async (table: string, consumer: string) => {
      const out = join(dir, `${consumer}-${n++}.ndjson`);
      await ok(m, s, 'export', '--table', table, '--format', 'ndjson', '--since-last', consumer, '-o', out, '--quiet');
      return ndjson(out);
    };
    expect((await since('score-details', 'details')).length).toBeGreaterThan(0);
    // Another table's feed for the same consumer name starts from the beginning: places are per table.
    expect((await since('eval-results', 'details')).length).toBeGreaterThan(0);
    expect(await since('score-details', 'details')).toEqual([]);
    const gone = s.data.roleResult(role, 2, 'DETAILED') as Row;
    await ok(m, s, 'forget', '--user', (gone.user as { email: string }).email);
    // Kept for the consumers of score details, though no consumer reads role results.
    expect(await m.holds(String(gone.id))).toBe(true);
    const rows = await since('score-details', 'details');
    expect(rows.map((r) => [r.role_result_id, r._deleted_reason])).toContainEqual([gone.id, 'erased']);
    for (const r of rows) expect(r._deleted_reason).toBe('erased');
    expect(await m.holds(String(gone.id))).toBe(true);
    const evals = await since('eval-results', 'details');
    expect(evals.filter((r) => r._deleted_reason !== null).map((r) => [r[RESULT_ID_COLUMN], r._deleted_reason])).toContainEqual([
      gone.id,
      'erased',
    ]);
    // Both feeds that read role results' tombstones have it: the id goes.
    expect(await m.holds(String(gone.id))).toBe(false);
  }, 120_000);

  it("a database that keeps an NDJSON pull's state gives no feed of a table its files hold (exit 2, one line)", async (ctx) => {
    if (kind !== 'ndjson') return ctx.skip();
    const s = await sim({ campaigns: 2, records: 3 });
    const m = open(kind);
    await ok(m, s, 'pull');
    for (const table of ['session-results', 'score-details', 'latest_results']) {
      const r = await m.run(s, 'export', '--table', table, '--since-last', 'bi', '-o', join(tempDir(), 'x.csv'));
      expect(r.code, table).toBe(2);
      expect(r.stderr.trim().split('\n'), table).toHaveLength(1);
      expect(r.stderr).toContain('it keeps the state of an NDJSON pull');
    }
    expect(await m.state('SELECT name FROM export_consumers')).toEqual([]);
  });

  it('a --columns list without the feed key is refused for every table and view (exit 2, one line)', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 3 });
    const m = open(kind);
    await ok(m, s, 'pull');
    const dir = tempDir();
    const run = (table: ExportTable, columns: string) =>
      m.run(
        s,
        'export',
        '--table',
        table,
        '--format',
        'csv',
        '--since-last',
        'bi',
        '-o',
        join(dir, `${table}.csv`),
        '--quiet',
        '--columns',
        columns,
      );
    for (const [table, without, withKey] of [
      ['score-details', 'id,score', 'role_result_id,id,score'],
      ['eval-results', 'parent_id,skill_key,score', 'parent_type,parent_id,skill_key,score'],
      ['skill_scores', 'result_id,skill_key', 'kind,result_id,skill_key'],
      ['latest_results', 'kind,candidate_email', 'kind,result_id'],
      ['campaigns', 'name', 'id,name'],
    ] as Array<[ExportTable, string, string]>) {
      const refused = await run(table, without);
      expect(refused.code, table).toBe(2);
      expect(refused.stderr.trim().split('\n'), table).toHaveLength(1);
      expect(refused.stderr).toMatch(/--since-last needs the key among --columns/);
      const taken = await run(table, withKey);
      expect(taken.code, `${table}: ${taken.stderr}`).toBe(0);
    }
    // Refused before anything: only the accepted exports have places.
    expect(Number((await m.sql('SELECT count(*) AS n FROM export_consumers'))[0]?.n)).toBe(5);
  });
});
