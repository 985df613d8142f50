/**
 * The mirror contract's harness: each kind of mirror (SQLite, NDJSON, PostgreSQL) described once, so
 * that one case runs the same commands against all three and compares what each holds with what the
 * simulator serves, in the manner of the Singer SDK's reusable target tests.
 *
 * A kind says how to point the CLI at a fresh mirror of its own (`args`, `pullArgs`, `env`), and how
 * to read back what the mirror holds as plain records (`records()`), every stored copy (`rows()`: an
 * NDJSON file keeps a line per change, a table a row per id), its campaigns, child rows astray
 * (`strays()`), whether any stored value holds a text (`holds()`, for erasure), and, for the two
 * kinds with tables, any query (`sql()`: the same SQL on SQLite and PostgreSQL for plain SELECTs),
 * and any query of the tables keeping the sync's state, which NDJSON keeps in SQLite too (`state()`).
 *
 * Adding a case (one place for every kind):
 *
 *     it('result_versions keeps each version once', async (ctx) => {
 *       if (unsupported(kind, 'versions', ctx)) return;   // NDJSON: skipped, saying why
 *       const s = await sim({ campaigns: 2, records: 30 }); // sharedSim() when nothing changes it
 *       const m = open(kind);
 *       expect((await m.run(s, 'pull', '--json')).code).toBe(0);
 *       const rows = await m.sql('SELECT id, version FROM result_versions ORDER BY id, version');
 *       …
 *     });
 *
 * inside the `describe.each(MIRRORS)` of a file under test/contract/ (a new file for a new feature
 * keeps merges apart). A case names the capability it needs (src/store/port.ts BackendCapabilities);
 * `unsupported()` skips it, saying why, on a kind whose backend declares it lacks that capability
 * (store/sqlite/backend.ts SQLITE_CAPABILITIES, store/pg/backend.ts PG_CAPABILITIES). What every
 * kind reads back differently for a new feature goes in `Mirror` as a new method.
 *
 * PostgreSQL: every PostgreSQL mirror is a fresh schema of the run's private server
 * (test/pg-global-setup.ts); without one the kind is skipped with one line, and under CI=true its
 * cases fail instead (test/helpers/pg.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type TestContext } from 'vitest';
import { parseJson } from '../../src/core/json.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { PG_CAPABILITIES } from '../../src/store/pg/backend.js';
import type { BackendCapabilities } from '../../src/store/port.js';
import { SQLITE_CAPABILITIES } from '../../src/store/sqlite/backend.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { type CliResult, get, tempDir } from '../helpers/index.js';
import { freshSchema, PG_URL, pgClient } from '../helpers/pg.js';
import { runCli } from '../helpers/run-cli.js';

export type MirrorKind = 'sqlite' | 'ndjson' | 'postgres';

/** Every kind, in the order cases run: `describe.each(MIRRORS)`. */
export const MIRRORS: MirrorKind[] = ['sqlite', 'ndjson', 'postgres'];

/** A capability a case may need: a flag of BackendCapabilities. */
export type Feature = keyof BackendCapabilities;

/** Each kind's capabilities as its backend declares them (NDJSON: the SQLite backend feeding files). */
const CAPABILITIES: Record<MirrorKind, BackendCapabilities> = {
  sqlite: SQLITE_CAPABILITIES.sqlite,
  ndjson: SQLITE_CAPABILITIES.ndjson,
  postgres: PG_CAPABILITIES,
};

/** What each capability is, for the line a skipped case prints ("… declare no <this>"). */
const MEANS: Record<Feature, string> = {
  fleet: 'fleet of workers syncing one mirror by stream leases',
  sharedBudget: "request budget's slots in the mirror's database, shared by every host",
  export: "export of the records from the mirror's tables",
  sql: 'tables of records for a SQL query',
  versions: "result_versions (each result's versions, for history and export --as-of)",
};

/** Whether `kind`'s backend declares `feature`: for a case that checks it only where it exists, and goes on elsewhere. */
export function can(kind: MirrorKind, feature: Feature): boolean {
  return CAPABILITIES[kind][feature];
}

/**
 * True (and the test skipped, saying why) when `kind`'s capabilities lack `feature`; a case returns at
 * once then. PostgreSQL without a server: skipped elsewhere, failed under CI=true.
 */
export function unsupported(kind: MirrorKind, feature: Feature | undefined, ctx: TestContext): boolean {
  if (kind === 'postgres' && !PG_URL) {
    if (process.env.CI === 'true') throw new Error('no PostgreSQL server for the tests (CAMPAIGN_SYNC_TEST_PG_URL is not set)');
    ctx.skip();
    return true;
  }
  if (feature === undefined || CAPABILITIES[kind][feature]) return false;
  ctx.skip(`${kind} has no ${feature}: its backend's capabilities declare no ${MEANS[feature]}`);
  return true;
}

/** A record as a mirror holds it: its id, campaign and the record parsed losslessly (int64 exact). */
export interface Held {
  id: string;
  campaign_id: string;
  record: unknown;
}

export interface Mirror {
  kind: MirrorKind;
  /** Flags naming this mirror, for every command. */
  args: string[];
  /** Flags `pull` and `watch` add (the NDJSON destination). */
  pullArgs: string[];
  env: Record<string, string>;
  /** Runs `command` against this mirror and simulator `s` (its URL and key through the environment). */
  run(s: RunningSimulator, command: string, ...args: string[]): Promise<CliResult>;
  /** What the mirror holds now, by id (session and role results; a tombstoned record is gone). */
  records(): Promise<Map<string, Held>>;
  /** Every stored copy of a record, a superseded NDJSON line included (for exactly-once checks). */
  rows(): Promise<Held[]>;
  /** Every stored copy of a campaign (the campaigns table, or campaigns.ndjson's lines). */
  campaigns(): Promise<Held[]>;
  /** Child rows (score details, eval results) without their parent, or of another campaign than it: 0 in a sound mirror. */
  strays(): Promise<number>;
  /** Whether any value the mirror stores holds `text` (any case): records, state, errors, files. */
  holds(text: string): Promise<boolean>;
  /** The rows of a query of the mirror's tables (a kind without the 'sql' capability throws: see `unsupported`). */
  sql(text: string): Promise<Array<Record<string, unknown>>>;
  /** The rows of a query of the tables that keep the sync's state (checkpoints, quarantine, drift): NDJSON's in its SQLite file. */
  state(text: string): Promise<Array<Record<string, unknown>>>;
}

const RESULTS_SQL = 'SELECT id, campaign_id, raw FROM session_results UNION ALL SELECT id, campaign_id, raw FROM role_results_full';

const CAMPAIGNS_SQL = 'SELECT id, id AS campaign_id, raw FROM campaigns';

const STRAYS_SQL = `SELECT
  (SELECT count(*) FROM eval_results e WHERE
     (e.parent_type = 'session_result' AND NOT EXISTS (SELECT 1 FROM session_results p WHERE p.id = e.parent_id))
  OR (e.parent_type = 'score_detail' AND NOT EXISTS (SELECT 1 FROM score_details d WHERE d.id = e.parent_id)))
+ (SELECT count(*) FROM score_details d WHERE NOT EXISTS (SELECT 1 FROM role_results r WHERE r.id = d.role_result_id))
+ (SELECT count(*) FROM score_details d JOIN role_results r ON r.id = d.role_result_id WHERE d.campaign_id <> r.campaign_id) AS n`;

function held(row: { id: unknown; campaign_id: unknown; raw: unknown }): Held {
  return { id: String(row.id), campaign_id: String(row.campaign_id), record: parseJson(String(row.raw)) };
}

function byId(rows: Held[]): Map<string, Held> {
  const map = new Map<string, Held>();
  for (const r of rows) {
    expect(map.has(r.id), `${r.id} stored twice`).toBe(false);
    map.set(r.id, r);
  }
  return map;
}

/** Every row of every table of a SQLite file, as JSON text (lower case). */
function sqliteText(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    return tables
      .map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).raw().all(), (_k, v) => (typeof v === 'bigint' ? String(v) : v)))
      .join('\n')
      .toLowerCase();
  } finally {
    db.close();
  }
}

/** The rows of `sql` in a SQLite file. */
function sqliteAll(path: string, sql: string): Array<Record<string, unknown>> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

function sqliteRows(path: string, sql = RESULTS_SQL): Held[] {
  return sqliteAll(path, sql).map((r) => held(r as { id: unknown; campaign_id: unknown; raw: unknown }));
}

function run(m: Pick<Mirror, 'args' | 'pullArgs' | 'env'>, s: RunningSimulator, command: string, args: string[]): Promise<CliResult> {
  const pulls = command === 'pull' || command === 'watch';
  return runCli([command, ...m.args, ...(pulls ? m.pullArgs : []), ...args], {
    env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, ...m.env },
  });
}

function sqliteMirror(): Mirror {
  const path = join(tempDir(), 'mirror.db');
  const m = { kind: 'sqlite' as const, args: ['--db', path], pullArgs: [], env: {} };
  return {
    ...m,
    run: (s, command, ...args) => run(m, s, command, args),
    rows: async () => sqliteRows(path),
    records: async () => byId(sqliteRows(path)),
    campaigns: async () => sqliteRows(path, CAMPAIGNS_SQL),
    strays: async () => Number(sqliteAll(path, STRAYS_SQL)[0]?.n),
    sql: async (text) => sqliteAll(path, text),
    state: async (text) => sqliteAll(path, text),
    holds: async (text) => sqliteText(path).includes(text.toLowerCase()),
  };
}

function ndjsonMirror(): Mirror {
  const dir = tempDir();
  const path = join(dir, 'state.db');
  const out = join(dir, 'out');
  const m = { kind: 'ndjson' as const, args: ['--db', path], pullArgs: ['--format', 'ndjson', '--out', out], env: {} };
  const lines = (files = ['session_results.ndjson', 'role_results.ndjson']): Array<Record<string, unknown>> =>
    files.flatMap((f) => {
      let text = '';
      try {
        text = readFileSync(join(out, f), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => parseJson(l) as Record<string, unknown>);
    });
  // A line is the record as served: its campaign is `campaign.id` (a tombstone's, `campaign_id`).
  const toHeld = (r: Record<string, unknown>): Held => ({
    id: String(r.id),
    campaign_id: String((r.campaign as { id?: unknown } | undefined)?.id ?? r.campaign_id),
    record: r,
  });
  return {
    ...m,
    run: (s, command, ...args) => run(m, s, command, args),
    rows: async () =>
      lines()
        .filter((r) => !('_deleted_at' in r))
        .map(toHeld),
    records: async () => {
      // The file is a log: a later line replaces an earlier one, a tombstone removes it.
      const map = new Map<string, Held>();
      for (const r of lines()) {
        if ('_deleted_at' in r) map.delete(String(r.id));
        else map.set(String(r.id), toHeld(r));
      }
      return map;
    },
    campaigns: async () => lines(['campaigns.ndjson']).map((r) => ({ id: String(r.id), campaign_id: String(r.id), record: r })),
    // A line holds its record whole: nothing can be left without its parent.
    strays: async () => 0,
    sql: async () => {
      throw new Error('an NDJSON mirror has no tables: its records are lines of files (see `unsupported`)');
    },
    state: async (text) => sqliteAll(path, text),
    holds: async (text) => {
      const needle = text.toLowerCase();
      let files: string[] = [];
      try {
        files = readdirSync(out).map((f) => join(out, f));
      } catch {}
      return sqliteText(path).includes(needle) || files.some((f) => readFileSync(f, 'utf8').toLowerCase().includes(needle));
    },
  };
}

async function pgQuery(schema: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const c = await pgClient();
  try {
    await c.query(`SET search_path TO ${schema}`);
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

function postgresMirror(): Mirror {
  const schema = freshSchema();
  // The URL holds the password: through the environment (on the command line it is warned about).
  const m = { kind: 'postgres' as const, args: ['--pg-schema', schema], pullArgs: [], env: { CAMPAIGN_SYNC_DB: PG_URL } };
  const rows = async (sql = RESULTS_SQL) =>
    (await pgQuery(schema, sql.replaceAll('raw FROM', 'raw::text AS raw FROM'))).map((r) =>
      held(r as { id: unknown; campaign_id: unknown; raw: unknown }),
    );
  return {
    ...m,
    run: (s, command, ...args) => run(m, s, command, args),
    rows,
    records: async () => byId(await rows()),
    campaigns: async () => rows(CAMPAIGNS_SQL),
    strays: async () => Number((await pgQuery(schema, STRAYS_SQL))[0]?.n),
    sql: (text) => pgQuery(schema, text),
    state: (text) => pgQuery(schema, text),
    holds: async (text) => {
      const tables = await pgQuery(schema, `SELECT table_name FROM information_schema.tables WHERE table_schema = '${schema}'`);
      for (const { table_name } of tables) {
        const found = await pgQuery(
          schema,
          `SELECT 1 FROM "${table_name}" t WHERE lower(t::text) LIKE '%' || lower($$${text}$$) || '%' LIMIT 1`,
        );
        if (found.length > 0) return true;
      }
      return false;
    },
  };
}

/** A fresh, empty mirror of `kind` (removed after the file's tests). */
export function open(kind: MirrorKind): Mirror {
  return kind === 'sqlite' ? sqliteMirror() : kind === 'ndjson' ? ndjsonMirror() : postgresMirror();
}

/** Runs a command on the mirror and expects it to succeed and say no error. */
export async function ok(m: Mirror, s: RunningSimulator, command: string, ...args: string[]): Promise<CliResult> {
  const r = await m.run(s, command, ...args);
  const what = [command, ...args].join(' ');
  expect(
    r.stderr.split('\n').filter((l) => /error/i.test(l)),
    what,
  ).toEqual([]);
  expect(r.code, `${what}: ${r.stderr}`).toBe(0);
  return r;
}

/**
 * What the simulator serves now (its changes included), read through its API as a client would:
 * every session and DETAILED role result of every campaign, in campaign order, parsed losslessly.
 * One id served by two campaigns appears twice, in campaign order.
 */
export async function served(s: RunningSimulator): Promise<Held[]> {
  const all: Held[] = [];
  for (const c of s.data.campaigns) {
    const endpoint = c.type === 'SESSION_COMPLETION' ? 'session' : c.type === 'ROLE_SUBMISSION' ? 'role' : undefined;
    if (endpoint === undefined) continue;
    let after: string | undefined;
    for (;;) {
      const q = `campaign_id=${c.id}&sort=asc&limit=100&report_type=DETAILED${after === undefined ? '' : `&starting_after=${after}`}`;
      const page = await get(s, `/v1/campaigns/${endpoint}/results?${q}`);
      expect(page.status).toBe(200);
      const body = parseJson(page.text) as { data: Array<Record<string, unknown>>; has_more: boolean };
      for (const r of body.data) all.push({ id: String(r.id), campaign_id: c.id, record: r });
      if (!body.has_more || body.data.length === 0) break;
      after = String(body.data.at(-1)?.order_index);
    }
  }
  return all;
}

/** `served(s)` by id, the first campaign serving an id keeping it (as the mirror does). */
export async function servedById(s: RunningSimulator): Promise<Map<string, Held>> {
  const map = new Map<string, Held>();
  for (const r of await served(s)) if (!map.has(r.id)) map.set(r.id, r);
  return map;
}

/** The campaigns the simulator lists, as served. */
export async function servedCampaigns(s: RunningSimulator): Promise<Held[]> {
  const list = await get(s, '/v1/campaigns');
  expect(list.status).toBe(200);
  return (parseJson(list.text) as { data: Array<Record<string, unknown>> }).data.map((r) => ({
    id: String(r.id),
    campaign_id: String(r.id),
    record: r,
  }));
}

/**
 * Asserts the mirror holds exactly what the simulator serves, record by record: every result once
 * with the campaign that served it first, every campaign once, every child row with its parent.
 */
export async function expectMirrors(m: Mirror, s: RunningSimulator): Promise<void> {
  const campaigns = await servedCampaigns(s);
  const stored = await m.campaigns();
  expect(stored.map((c) => c.id).sort()).toEqual(campaigns.map((c) => c.id).sort());
  for (const c of campaigns) expect(stored.find((x) => x.id === c.id)?.record, c.id).toEqual(c.record);
  expect(await m.strays()).toBe(0);
  const want = await servedById(s);
  const got = await m.records();
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [id, w] of want) {
    const g = got.get(id) as Held;
    expect(g.campaign_id, id).toBe(w.campaign_id);
    expect(g.record, id).toEqual(w.record);
  }
}

/**
 * Runs statements that change `m`'s tables (to turn it into what an older release left, or to age
 * a stream): its SQLite file (an NDJSON mirror's state file) or its PostgreSQL schema.
 */
export async function alter(m: Mirror, sql: string): Promise<void> {
  const at = m.args[m.args.length - 1] as string;
  if (m.kind === 'postgres') {
    const c = await pgClient();
    try {
      await c.query(`SET search_path TO ${at}`);
      await c.query(sql);
    } finally {
      await c.end();
    }
    return;
  }
  const db = new Database(at);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

/** The text of an NDJSON mirror's file `name` ('' when it has no such file). */
export function ndjsonText(m: Mirror, name: string): string {
  const out = m.pullArgs[m.pullArgs.indexOf('--out') + 1];
  if (m.kind !== 'ndjson' || out === undefined) throw new Error(`a ${m.kind} mirror has no NDJSON files`);
  try {
    return readFileSync(join(out, name), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return '';
  }
}

/** The lines of an NDJSON mirror's file `name` (none when it has no such file), parsed losslessly. */
export function ndjsonLines(m: Mirror, name: string): Array<Record<string, unknown>> {
  return ndjsonText(m, name)
    .split('\n')
    .filter(Boolean)
    .map((l) => parseJson(l) as Record<string, unknown>);
}

/** Runs `command` against `m` as `m.run` does, on the run's clock `clock` (a fakeClock's waits between watch passes take no time). */
export function runOnClock(
  m: Mirror,
  s: RunningSimulator,
  clock: import('../../src/core/clock.js').Clock,
  command: string,
  ...args: string[]
): Promise<CliResult> {
  const pulls = command === 'pull' || command === 'watch';
  return runCli([command, ...m.args, ...(pulls ? m.pullArgs : []), ...args], {
    env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, ...m.env },
    clock,
  });
}
