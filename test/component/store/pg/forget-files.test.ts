/**
 * No byte of an erased person stays in the PostgreSQL mirror's relation files: after `forget --user`
 * and `forget --older-than`, and a CHECKPOINT, the files of every table, TOAST table and index of
 * the mirror's schema are read raw from the server's data directory (the test server runs on this
 * machine: test/helpers/pg-server.ts) and hold neither the e-mail nor the user id. The same files
 * held them before, so the check can fail. A table locked for its rewrite makes a pull wait, never
 * fail; a rewrite the server refused is left marked, and the next pull finishes it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cutOf, servedResults } from '../../../helpers/history.js';
import { sim } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgClient, pgRows } from '../../../helpers/pg.js';
import { runCli } from '../../../helpers/run-cli.js';

const RECORDS = 20;

/**
 * A database of this file's own: VACUUM keeps what an open transaction of the same database may see,
 * and other test files hold transactions open on purpose (a pull held at a gate).
 */
const OWN_DB = `cs_forget_files_${process.pid}`;
const OWN_URL = (() => {
  if (!PG_URL) return '';
  const u = new URL(PG_URL);
  u.pathname = `/${OWN_DB}`;
  return u.toString();
})();

const ownClient = () => pgClient(OWN_URL);
const ownRows = (schema: string, sql: string, values: unknown[] = []) => pgRows(schema, sql, values, OWN_URL);

/** The files of every relation of `schema` (tables, their TOAST tables, every index), each segment. */
async function relationFiles(schema: string): Promise<Array<{ file: string; name: string }>> {
  const c = await ownClient();
  try {
    await c.query('CHECKPOINT');
    const dir = String((await c.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir")).rows[0]?.dir);
    const rels = await c.query<{ path: string | null; name: string }>(
      `WITH own AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1),
         toast AS (SELECT reltoastrelid AS oid FROM own WHERE reltoastrelid <> 0),
         toast_index AS (SELECT i.indexrelid AS oid FROM pg_index i JOIN toast t ON i.indrelid = t.oid)
       SELECT pg_relation_filepath(oid) AS path, oid::regclass::text AS name
         FROM (SELECT oid FROM own UNION SELECT oid FROM toast UNION SELECT oid FROM toast_index) x`,
      [schema],
    );
    const files: Array<{ file: string; name: string }> = [];
    for (const { path, name } of rels.rows) {
      if (path === null) continue;
      const base = join(dir, path);
      for (let seg = 0; ; seg++) {
        const file = seg === 0 ? base : `${base}.${seg}`;
        if (!existsSync(file)) break;
        files.push({ file, name });
      }
    }
    expect(files.length).toBeGreaterThan(10);
    return files;
  } finally {
    await c.end();
  }
}

/** The relations among `files` whose files hold any of `needles` (as UTF-8 bytes). */
function holding(files: Array<{ file: string; name: string }>, needles: string[]): string[] {
  return files
    .filter(({ file }) => {
      const bytes = readFileSync(file);
      return needles.some((n) => bytes.includes(Buffer.from(n, 'utf8')));
    })
    .map((f) => f.name);
}

/** Rows of any table of `schema` whose text holds `needle`: what the mirror may rightly keep. */
async function rowsHolding(schema: string, needle: string): Promise<number> {
  const tables = await ownRows(schema, "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'meta'", [schema]);
  let n = 0;
  for (const { tablename } of tables) {
    const r = await ownRows(schema, `SELECT count(*)::int AS n FROM ${String(tablename)} t WHERE t::text LIKE $1`, [`%${needle}%`]);
    n += Number(r[0]?.n);
  }
  return n;
}

describePg('forget leaves no byte of the person in the PostgreSQL relation files', () => {
  beforeAll(async () => {
    const c = await pgClient();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${OWN_DB}`);
      await c.query(`CREATE DATABASE ${OWN_DB}`);
    } finally {
      await c.end();
    }
  });
  afterAll(async () => {
    const c = await pgClient();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${OWN_DB}`);
    } catch {
      // A connection still open (a pool closing): the next run's beforeAll drops it.
    } finally {
      await c.end();
    }
  });

  it('forget --user: the e-mail and user id are in the files before, in none after (tables, TOAST, indexes)', async () => {
    const s = await sim({ campaigns: 3, records: RECORDS });
    const schema = freshSchema();
    const db = ['--db', OWN_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const [who] = await ownRows(schema, 'SELECT user_email, user_id FROM role_results WHERE user_email IS NOT NULL ORDER BY id LIMIT 1');
    const email = String(who?.user_email);
    const userId = String(who?.user_id);
    // A stored error that quoted them: sync_state is rewritten too.
    await ownRows(schema, 'UPDATE sync_state SET last_error = $1 WHERE stream = (SELECT min(stream) FROM sync_state)', [
      `500 cannot score ${email} (request_id rq-1)`,
    ]);
    expect(holding(await relationFiles(schema), [email, userId]).length).toBeGreaterThan(0);

    const r = await runCli(['forget', ...db, '--user', email, '--yes']);
    expect(r.code, r.stderr).toBe(0);
    expect(await rowsHolding(schema, email)).toBe(0);
    expect(await rowsHolding(schema, userId)).toBe(0);
    expect(holding(await relationFiles(schema), [email, userId])).toEqual([]);
    expect(await ownRows(schema, "SELECT value FROM meta WHERE key = 'erasure_rewrite_pending'")).toEqual([]);
  });

  it('forget --older-than: an erased result’s e-mail, user id and id are in none of the files after', async () => {
    const s = await sim({ campaigns: 3, records: RECORDS });
    const schema = freshSchema();
    const db = ['--db', OWN_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const cut = cutOf(servedResults(s, RECORDS));
    const young = new Set(cut.young.flatMap((y) => [y.email.toLowerCase(), y.userId]));
    // A person whose every result is older than the cut: nothing of theirs may stay.
    const gone = cut.old.find((o) => !young.has(o.email.toLowerCase()) && !young.has(o.userId));
    expect(gone).toBeDefined();
    const needles = [gone?.email as string, gone?.userId as string, gone?.id as string];
    expect(holding(await relationFiles(schema), needles).length).toBeGreaterThan(0);

    const r = await runCli(['forget', ...db, '--older-than', cut.duration(), '--yes']);
    expect(r.code, r.stderr).toBe(0);
    // No consumer reads the results, so no tombstone keeps the ids.
    for (const n of needles) expect(await rowsHolding(schema, n)).toBe(0);
    expect(holding(await relationFiles(schema), needles)).toEqual([]);
  });

  it('a transaction open from before the erasure keeps its rows alive: exit 74 naming it, and the next forget rewrites once it ended', async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const db = ['--db', OWN_URL, '--pg-schema', schema];
    expect((await runCli(['pull', ...db, '--base-url', s.url], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    const [who] = await ownRows(schema, 'SELECT user_email FROM session_results WHERE user_email IS NOT NULL ORDER BY id LIMIT 1');
    const email = String(who?.user_email);
    // A dashboard's query left open: its snapshot still sees the rows the erasure removes.
    const dashboard = await ownClient();
    try {
      await dashboard.query("SET application_name = 'dashboard'");
      // Its snapshot, taken by its first statement, and no lock on the mirror's tables (which would make the rewrite wait for it).
      await dashboard.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await dashboard.query('SELECT 1');
      const r = await runCli(['forget', ...db, '--user', email], { waits: { pgSnapshotMs: 300 } });
      expect(r.code).toBe(74);
      expect(r.stderr).toMatch(
        /the erasure is committed, but a transaction open since \S+ \(dashboard, pid \d+\) still sees the erased rows, so their old versions stay in the files of [a-z_, ]*session_results/,
      );
      expect(
        JSON.parse(String((await ownRows(schema, "SELECT value FROM meta WHERE key = 'erasure_rewrite_pending'"))[0]?.value)),
      ).toContain('session_results');
      await dashboard.query('COMMIT');
    } finally {
      await dashboard.end();
    }
    // Once it ended: another forget (of anyone) finishes the rewrite.
    const again = await runCli(['forget', ...db, '--user', 'nobody@example.com']);
    expect(again.stderr).toMatch(/no record of the candidate "nobody@example.com"/);
    expect(await ownRows(schema, "SELECT value FROM meta WHERE key = 'erasure_rewrite_pending'")).toEqual([]);
    expect(holding(await relationFiles(schema), [email])).toEqual([]);
  });

  it('a pull waits for a table locked as VACUUM FULL locks it, and completes (exit 0)', async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const db = ['--db', OWN_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    expect((await runCli(['pull', ...db, '--base-url', s.url], env)).code).toBe(0);
    const c = await ownClient();
    const watcher = await ownClient();
    try {
      await c.query('BEGIN');
      await c.query(`LOCK TABLE ${schema}.sync_state, ${schema}.session_results, ${schema}.role_results IN ACCESS EXCLUSIVE MODE`);
      let ended = false;
      const pull = runCli(['pull', ...db, '--base-url', s.url], env).finally(() => {
        ended = true;
      });
      // Until the pull is seen waiting on the lock.
      for (;;) {
        if (ended) throw new Error(`the pull ended without waiting: ${(await pull).stderr}`);
        // Outside the locking transaction, whose view of pg_stat_activity is taken once.
        const waiting = await watcher.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name LIKE 'campaign-sync%' AND pid <> pg_backend_pid()",
        );
        if (waiting.rowCount !== 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await c.query('COMMIT');
      const r = await pull;
      expect(r.code, r.stderr).toBe(0);
    } finally {
      await c.end();
      await watcher.end();
    }
  });

  it('a refused rewrite is exit 74 saying the erasure is committed; the next pull rewrites and clears the mark', async () => {
    const s = await sim({ campaigns: 2, records: 10 });
    const schema = freshSchema();
    const db = ['--db', OWN_URL, '--pg-schema', schema];
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    expect((await runCli(['pull', ...db, '--base-url', s.url], env)).code).toBe(0);
    const [who] = await ownRows(schema, 'SELECT user_email FROM session_results WHERE user_email IS NOT NULL ORDER BY id LIMIT 1');
    const email = String(who?.user_email);
    // The server refuses the copy: a reader holds the table, and the connection's lock_timeout runs out.
    const timeout = `${OWN_URL}${OWN_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c lock_timeout=300ms')}`;
    const c = await ownClient();
    try {
      await c.query('BEGIN');
      await c.query(`SELECT count(*) FROM ${schema}.session_results`);
      const r = await runCli(['forget', '--db', timeout, '--pg-schema', schema, '--user', email, '--yes'], {
        waits: { pgSnapshotMs: 300 },
      });
      expect(r.code).toBe(74);
      expect(r.stderr).toMatch(
        /the erasure is committed, but .* refused to rewrite table session_results: .*stay in its files until `campaign-sync forget` runs again/,
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
      await c.query('COMMIT');
    } finally {
      await c.end();
    }
    expect((await ownRows(schema, 'SELECT count(*)::int AS n FROM session_results WHERE user_email = $1', [email]))[0]?.n).toBe(0);
    const [mark] = await ownRows(schema, "SELECT value FROM meta WHERE key = 'erasure_rewrite_pending'");
    expect(JSON.parse(String(mark?.value))).toContain('session_results');
    expect(holding(await relationFiles(schema), [email]).length).toBeGreaterThan(0);

    const again = await runCli(['pull', ...db, '--base-url', s.url], env);
    expect(again.code, again.stderr).toBe(0);
    expect(await ownRows(schema, "SELECT value FROM meta WHERE key = 'erasure_rewrite_pending'")).toEqual([]);
    expect(holding(await relationFiles(schema), [email])).toEqual([]);
  });
});
