/**
 * An erasure is a change every consumer receives (./mirrors.ts says how to add a case): a warehouse
 * fed only by `export --since-last` files, through re-scores, late arrivals, reconcile --prune,
 * `forget --user` of a candidate found inside another's record, and `forget --older-than`, holds
 * after every round exactly what the mirror holds. A deletion row names nobody (the result's id, its
 * time and why); the record an erasure rewrote is given again whole; and once the only consumer read
 * an erasure, no byte of the erased ids is left in the database.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { instant } from '../../src/store/model/erase-rule.js';
import { parseStrictCsv } from '../helpers/csv.js';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim, tempDir } from '../helpers/index.js';
import { campaignOf, ndjson, nestCandidate, type Row } from './feed-setup.js';
import { MIRRORS, type Mirror, ok, open, unsupported } from './mirrors.js';

const RECORDS = 20;
const TABLES = ['session-results', 'role-results'] as const;
const DELETION = ['_deleted_at', '_deleted_reason'];

/** What one round of the warehouse's loads received, per table. */
type Received = Record<(typeof TABLES)[number], { changed: Row[]; deleted: Row[] }>;

/**
 * A warehouse loaded only from `--since-last` files of consumer `bi`: per table, rows by id; a
 * deletion row removes its id, any other row replaces it whole. `round()` loads what changed, then
 * compares every table with a full export of the mirror.
 */
function warehouse(m: Mirror, s: RunningSimulator) {
  const dir = tempDir();
  const tables = new Map<string, Map<string, Row>>(TABLES.map((t) => [t, new Map()]));
  let n = 0;
  const exported = async (table: string, ...flags: string[]) => {
    const out = join(dir, `${table}-${n++}.ndjson`);
    await ok(m, s, 'export', '--table', table, '--format', 'ndjson', '-o', out, '--quiet', ...flags);
    return ndjson(out);
  };
  return {
    /** The ids of the rows the warehouse holds (every table) that `pick` takes. */
    ids(pick: (row: Row) => boolean): string[] {
      return [...tables.values()].flatMap((t) => [...t.values()].filter(pick).map((r) => String(r.id))).sort();
    },
    async round(): Promise<Received> {
      const got = {} as Received;
      for (const table of TABLES) {
        const copy = tables.get(table) as Map<string, Row>;
        const rows = await exported(table, '--since-last', 'bi');
        const deleted = rows.filter((r) => r._deleted_at !== null);
        const changed = rows.filter((r) => r._deleted_at === null);
        for (const r of deleted) copy.delete(String(r.id));
        for (const r of changed) {
          const { _deleted_at, _deleted_reason, ...row } = r;
          expect(_deleted_reason).toBeNull();
          copy.set(String(r.id), row);
        }
        got[table] = { changed, deleted };
        const mirror = new Map((await exported(table)).map((r) => [String(r.id), r]));
        expect(copy, `${table}: the warehouse equals the mirror`).toEqual(mirror);
      }
      return got;
    },
  };
}

/** Asserts a deletion row says the id, when and why, and nothing else (a pruned one: its campaign too). */
function expectNamesNobody(row: Row, reason: string): void {
  expect(row._deleted_reason).toBe(reason);
  expect(Number.isNaN(Date.parse(String(row._deleted_at)))).toBe(false);
  const said = Object.keys(row).filter((k) => row[k] !== null);
  expect(said.sort()).toEqual(['id', ...DELETION, ...(reason === 'pruned' ? ['campaign_id'] : [])].sort());
}

/** Whether the bytes of a SQLite mirror's files (the database and its WAL) hold `text`. */
function fileHolds(m: Mirror, text: string): boolean {
  const path = m.args[m.args.indexOf('--db') + 1] as string;
  return ['', '-wal'].some((x) => {
    try {
      return readFileSync(path + x).includes(Buffer.from(text));
    } catch {
      return false;
    }
  });
}

/** Whether anything of the mirror holds `text`: its values, and for SQLite every byte of its files. */
async function anywhere(m: Mirror, text: string): Promise<boolean> {
  return (await m.holds(text)) || (m.kind === 'sqlite' && fileHolds(m, text));
}

/**
 * A warehouse loaded only by the manifest's ranges (the recipe of docs/syncing.md, as a test's own
 * loader): per file, the lines loaded replayed as a log (a later line replaces its id, a tombstone
 * removes it). A range must start where the file's loaded bytes end in its generation and match its
 * digest; a rewrite line voids what was loaded from its file and loads its generation whole.
 */
function manifestLoader(m: Mirror) {
  const out = m.pullArgs[m.pullArgs.indexOf('--out') + 1] as string;
  const loaded = new Map<string, { generation: number; end: number; lines: Row[] }>();
  let from = 0;
  const slice = (file: string, start: number, end: number, sha256: string): Row[] => {
    const bytes = readFileSync(join(out, file)).subarray(start, end);
    expect(bytes.length, `${file} [${start}, ${end})`).toBe(end - start);
    expect(createHash('sha256').update(bytes).digest('hex'), `${file} [${start}, ${end})`).toBe(sha256);
    return bytes
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Row);
  };
  return {
    /** Loads what the manifest added since the last call; returns the rewrite lines it met. */
    async load(): Promise<Row[]> {
      const [row] = await m.state("SELECT committed_bytes AS n FROM ndjson_files WHERE path LIKE '%/_manifest.ndjson'");
      const upto = Number(row?.n ?? 0);
      const text = readFileSync(join(out, '_manifest.ndjson')).subarray(from, upto).toString('utf8');
      from = upto;
      const entries = text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { rewrite?: Row; files?: Row[] });
      // A file rewritten again later in this batch: only its last generation can still be read.
      const last = new Map<string, number>();
      for (const e of entries) if (e.rewrite) last.set(String(e.rewrite.file), Number(e.rewrite.generation));
      const rewrites: Row[] = [];
      for (const e of entries) {
        if (e.rewrite) {
          const r = e.rewrite as { file: string; generation: number; size: number; sha256: string };
          rewrites.push(r);
          if (r.generation !== last.get(r.file)) continue;
          loaded.set(r.file, { generation: r.generation, end: r.size, lines: slice(r.file, 0, r.size, r.sha256) });
          continue;
        }
        for (const f of (e.files ?? []) as Array<{ file: string; generation: number; start: number; end: number; sha256: string }>) {
          const g = last.get(f.file);
          if (g !== undefined && f.generation < g) continue;
          const have = loaded.get(f.file) ?? { generation: f.generation, end: 0, lines: [] };
          // The ranges tile each generation: no gap, no overlap.
          expect({ generation: f.generation, start: f.start }, f.file).toEqual({ generation: have.generation, start: have.end });
          loaded.set(f.file, { generation: f.generation, end: f.end, lines: [...have.lines, ...slice(f.file, f.start, f.end, f.sha256)] });
        }
      }
      return rewrites;
    },
    /** The records loaded (the results' files replayed), by id. */
    records(): Map<string, Row> {
      const map = new Map<string, Row>();
      for (const file of ['session_results.ndjson', 'role_results.ndjson']) {
        for (const r of loaded.get(file)?.lines ?? []) {
          if ('_deleted_at' in r) map.delete(String(r.id));
          else map.set(String(r.id), r);
        }
      }
      return map;
    },
  };
}

describe('the manifest says what happened (ndjson)', () => {
  it('a warehouse loaded by manifest ranges equals the mirror through re-scores, late arrivals, prune, forget and retention', async (ctx) => {
    if (unsupported('ndjson', undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const { session, own, b } = nestCandidate(s);
    const m = open('ndjson');
    const wh = manifestLoader(m);
    const same = async () => {
      const held = new Map([...(await m.records())].map(([id, h]) => [id, h.record]));
      expect(wh.records()).toEqual(held);
    };
    await ok(m, s, 'pull');
    expect(await wh.load()).toEqual([]);
    await same();

    s.changes.rescore(session, 2, Date.now());
    s.changes.arriveLate(session, 3, Date.now());
    await ok(m, s, 'pull', '--full');
    await wh.load();
    await same();

    s.changes.remove(session, 7);
    await ok(m, s, 'reconcile', '--prune');
    await wh.load();
    await same();

    await ok(m, s, 'forget', '--user', b.email);
    const erased = await wh.load();
    expect(erased.map((r) => [r.file, r.generation, r.reason]).sort()).toEqual([
      ['role_results.ndjson', 2, 'erased'],
      ['session_results.ndjson', 2, 'erased'],
    ]);
    await same();
    // The manifest names no erased id or e-mail: it is never rewritten.
    expect(await m.holds(b.email)).toBe(false);
    expect(await m.holds(String(own.id))).toBe(false);
    // New lines after the rewrite are ranges of the new generation, from its end (a --full pull
    // brings B back: the service still serves them).
    s.changes.rescore(session, 3, Date.now());
    await ok(m, s, 'pull', '--full');
    await wh.load();
    await same();

    const cut = cutOf(servedResults(s, RECORDS));
    await ok(m, s, 'forget', '--older-than', cut.duration(), '--yes');
    const retained = await wh.load();
    expect(retained.map((r) => r.reason)).toEqual(['retention', 'retention']);
    await same();
    expect([...wh.records().values()].every((r) => (instant(r.created_at) ?? 0) >= cut.at)).toBe(true);
  });
});

describe.each(MIRRORS)('an erasure reaches every --since-last consumer (%s)', (kind) => {
  it('a warehouse fed by --since-last equals the mirror after every round; deletions name nobody; read erased ids leave the database', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    // B: a candidate with a session result of their own, whose score detail the host's result holds too.
    const { role, session, host, own, b } = nestCandidate(s);
    const m = open(kind);
    await ok(m, s, 'pull');
    const wh = warehouse(m, s);
    const first = await wh.round();
    expect(first['session-results'].changed.length).toBe(RECORDS);

    // Re-scores and late arrivals.
    s.changes.rescore(session, 2, Date.now());
    s.changes.rescore(role, 3, Date.now());
    s.changes.arriveLate(session, 3, Date.now());
    await ok(m, s, 'pull', '--full');
    const rescored = await wh.round();
    expect(rescored['session-results'].changed.map((r) => r.id)).toContain(s.data.sessionResult(session, 2).id);
    expect(rescored['session-results'].deleted).toEqual([]);

    // The service deletes a result, reconcile --prune follows.
    const removed = String(s.data.sessionResult(session, 7).id);
    s.changes.remove(session, 7);
    await ok(m, s, 'reconcile', '--prune');
    const pruned = await wh.round();
    expect(pruned['session-results'].deleted.map((r) => r.id)).toEqual([removed]);
    for (const r of pruned['session-results'].deleted) expectNamesNobody(r, 'pruned');

    // forget B: their own results are deletion rows; the host's result, rewritten without them, comes again whole.
    const theirs = wh.ids((r) => String(r.user_email).toLowerCase() === b.email.toLowerCase());
    expect(theirs).toContain(String(own.id));
    expect(await m.holds(b.email)).toBe(true);
    const forgot = JSON.parse((await ok(m, s, 'forget', '--user', b.email, '--json')).stdout) as { removed: Row };
    expect(forgot.removed).toMatchObject({ records_changed: 1 });
    // Until the consumer read it, an erased id is kept for it, and only the id.
    for (const id of theirs) expect(await m.holds(id)).toBe(true);
    expect(await m.holds(b.email)).toBe(false);
    const erased = await wh.round();
    const erasedRows = TABLES.flatMap((t) => erased[t].deleted);
    expect(erasedRows.map((r) => String(r.id)).sort()).toEqual(theirs);
    for (const r of erasedRows) expectNamesNobody(r, 'erased');
    expect(erased['role-results'].changed.map((r) => r.id)).toEqual([host.id]);
    for (const t of TABLES) expect(JSON.stringify(erased[t]).toLowerCase()).not.toContain(b.email.toLowerCase());
    expect(JSON.stringify(erased['role-results'])).not.toContain('nested-detail-b');
    // The only consumer has them: no byte of an erased id is left.
    for (const id of theirs) expect(await anywhere(m, id), id).toBe(false);
    expect(await anywhere(m, b.email)).toBe(false);

    // A retention: every result dated before the cut is a deletion row, then gone from the database.
    const cut = cutOf(servedResults(s, RECORDS));
    const old = wh.ids((r) => (instant(r.created_at) ?? Number.POSITIVE_INFINITY) < cut.at);
    expect(old.length).toBeGreaterThan(0);
    await ok(m, s, 'forget', '--older-than', cut.duration(), '--yes');
    const retained = await wh.round();
    const deleted = TABLES.flatMap((t) => retained[t].deleted);
    expect(deleted.map((r) => String(r.id)).sort()).toEqual(old);
    for (const r of deleted) expectNamesNobody(r, 'retention');
    for (const id of old) expect(await anywhere(m, id), id).toBe(false);

    // Nothing changed since: nothing again.
    const quiet = await wh.round();
    for (const t of TABLES) expect(quiet[t]).toEqual({ changed: [], deleted: [] });
    // Some forty commands, each forget rebuilding or vacuuming the mirror: more than the default on a busy PostgreSQL.
  }, 240_000);

  it('a mirror no consumer reads keeps no erased id at all; a second consumer does not hold back what the first read', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 10 });
    const session = campaignOf(s, 'SESSION_COMPLETION');
    const m = open(kind);
    await ok(m, s, 'pull');
    const a = s.data.sessionResult(session, 2) as Row;
    const idsOf = async (r: Row) =>
      (
        await m.sql(
          `SELECT id FROM session_results WHERE user_id = '${(r.user as { id: string }).id}' UNION ALL SELECT id FROM role_results WHERE user_id = '${(r.user as { id: string }).id}'`,
        )
      )
        .map((x) => String(x.id))
        .sort();
    const ofA = await idsOf(a);
    await ok(m, s, 'forget', '--user', (a.user as { email: string }).email);
    for (const id of ofA) expect(await anywhere(m, id), id).toBe(false);
    expect(await m.sql('SELECT id FROM tombstones')).toEqual([]);

    // Two consumers: the id stays until both read it.
    const dir = tempDir();
    const since = async (consumer: string) => {
      const out = join(dir, `${consumer}-${Math.random().toString(36).slice(2)}.ndjson`);
      await ok(m, s, 'export', '--table', 'session-results', '--format', 'ndjson', '--since-last', consumer, '-o', out, '--quiet');
      return ndjson(out);
    };
    await since('one');
    await since('two');
    const c = s.data.sessionResult(session, 3) as Row;
    // Their session results: the consumers read that table only.
    const ofC = (await idsOf(c)).filter((id) => id !== undefined);
    const sessionsOfC = (await m.sql(`SELECT id FROM session_results WHERE user_id = '${(c.user as { id: string }).id}'`))
      .map((x) => String(x.id))
      .sort();
    await ok(m, s, 'forget', '--user', (c.user as { email: string }).email);
    const deletedFor = async (consumer: string) =>
      (await since(consumer))
        .filter((r) => r._deleted_at !== null)
        .map((r) => String(r.id))
        .sort();
    expect(await deletedFor('one')).toEqual(sessionsOfC);
    for (const id of sessionsOfC) expect(await m.holds(id), id).toBe(true);
    expect(await deletedFor('two')).toEqual(sessionsOfC);
    for (const id of ofC) expect(await anywhere(m, id), id).toBe(false);
  }, 180_000);

  it('a --columns list without the key is refused (exit 2, one line); its CSV is exact values unless --safe-csv', async (ctx) => {
    if (unsupported(kind, 'export', ctx)) return;
    const s = await sim({ campaigns: 2, records: 5 });
    const session = campaignOf(s, 'SESSION_COMPLETION');
    const formula = '=HYPERLINK("http://example.com")';
    const sessionResult = s.data.sessionResult.bind(s.data);
    s.data.sessionResult = (c, i, created) => {
      const r = sessionResult(c, i, created) as Row;
      return c.id === session.id && i === 1 ? { ...r, scenario: { ...(r.scenario as Row), name: formula } } : r;
    };
    const m = open(kind);
    await ok(m, s, 'pull');
    const dir = tempDir();
    const flags = (consumer: string, ...more: string[]) => [
      'export',
      '--table',
      'session-results',
      '--format',
      'csv',
      '--since-last',
      consumer,
      '-o',
      join(dir, `${consumer}.csv`),
      '--quiet',
      ...more,
    ];
    const keyless = await m.run(s, ...(flags('bi', '--columns', 'campaign_id,score') as [string, ...string[]]));
    expect(keyless.code).toBe(2);
    expect(keyless.stderr.trim().split('\n')).toHaveLength(1);
    expect(keyless.stderr).toMatch(/--since-last needs the key among --columns \(id\)/);
    // Refused before anything: the consumer has no place yet.
    expect(await m.sql('SELECT name FROM export_consumers')).toEqual([]);

    const names = (consumer: string, ...more: string[]) =>
      m.run(s, ...(flags(consumer, '--columns', 'id,scenario_name', ...more) as [string, ...string[]])).then((r) => {
        expect(r.code, r.stderr).toBe(0);
        return parseStrictCsv(readFileSync(join(dir, `${consumer}.csv`), 'utf8'))
          .slice(1)
          .map((row) => row[1]);
      });
    expect(await names('loader')).toContain(formula);
    expect(await names('sheet', '--safe-csv')).toContain(`'${formula}`);
    const both = await m.run(s, ...(flags('x', '--raw-csv', '--safe-csv') as [string, ...string[]]));
    expect(both.code).toBe(2);
  });
});
