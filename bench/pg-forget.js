// What `forget --user` costs on a large PostgreSQL team mirror, with the rewrite of the tables it
// changed (VACUUM FULL, store/pg/rewrite.ts) and, for comparison, with the plain VACUUM it ran before.
//
//   node bench/pg-forget.js [--results N]      (after `npm run build`; default 1,000,000)
//
// The mirror: a small pull from the simulator makes the schema and a few template rows; SQL then
// copies them to N results, half session results (each with 2 eval results), half role results,
// each pair of one made-up person (their own id and e-mail). The server: CAMPAIGN_SYNC_BENCH_PG_URL
// if set, else a throwaway one (bench/pg.js: default settings, fsync on).
//
// Measured: the spawned `forget --user <e-mail> --yes` end to end; then, in-process for another
// person, the erasure's transaction alone, a plain VACUUM of the tables it changed, and their
// VACUUM FULL, with the WAL each wrote.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { startSimulator } from '../dist/simulator/server.js';
import { PgDatabase } from '../dist/store/pg/database.js';
import { eraseFromPg } from '../dist/store/pg/erase-rows.js';
import { pendingRewrite, rewriteErased } from '../dist/store/pg/rewrite.js';
import { startServer } from './pg.js';

const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--results');
const RESULTS = at >= 0 ? Number(args[at + 1]) : 1_000_000;
const SCHEMA = 'bench_forget';
const PAIRS = Math.floor(RESULTS / 2);

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes) => `${(Number(bytes) / 1024 / 1024).toFixed(0)} MiB`;

async function timed(fn) {
  const started = performance.now();
  const out = await fn();
  return { ms: performance.now() - started, out };
}

/** Template row `t`'s columns, as person `g`'s copy: their result id, user id and e-mail in the columns and the text. */
function personal(columns, prefix) {
  const value = {
    id: `'${prefix}-' || g`,
    user_id: "'bench-user-' || g",
    user_email: "'bench-' || g || '@example.com'",
    raw: `jsonb_set(jsonb_set(t.raw, '{id}', to_jsonb('${prefix}-' || g)), '{user}', jsonb_build_object('id', 'bench-user-' || g, 'email', 'bench-' || g || '@example.com'))`,
  };
  return columns.map((c) => value[c] ?? `t.${c}`).join(', ');
}

/** The columns of `table` in the mirror's schema. */
async function columnsOf(c, table) {
  const r = await c.query(
    'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
    [SCHEMA, table],
  );
  return r.rows.map((row) => row.column_name);
}

async function build(url) {
  const sim = await startSimulator({ seed: 'bench', campaigns: 2, records: 5, unknownTypeCampaigns: 0 });
  try {
    await promisify(execFile)('node', [BIN, 'pull', '--db', url, '--pg-schema', SCHEMA, '--base-url', sim.url], {
      env: { ...process.env, CAMPAIGN_SYNC_API_KEY: sim.apiKey },
    });
  } finally {
    await sim.close();
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SET search_path TO ${SCHEMA}`);
    for (const [table, prefix] of [
      ['session_results', 'bench-s'],
      ['role_results', 'bench-r'],
    ]) {
      const tmpl = `tmpl_${prefix.slice(-1)}`;
      await c.query(`CREATE TEMP TABLE ${tmpl} AS SELECT row_number() OVER (ORDER BY id) - 1 AS k, * FROM ${table}`);
      const k = Number((await c.query(`SELECT count(*) AS n FROM ${tmpl}`)).rows[0].n);
      const columns = await columnsOf(c, table);
      await c.query(
        `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${personal(columns, prefix)}
         FROM generate_series(1, ${PAIRS}) g JOIN ${tmpl} t ON t.k = g % ${k}`,
      );
    }
    const k = Number((await c.query('SELECT count(*) AS n FROM tmpl_s')).rows[0].n);
    const evals = await columnsOf(c, 'eval_results');
    await c.query(
      `INSERT INTO eval_results (${evals.join(', ')})
       SELECT ${evals.map((col) => (col === 'parent_id' ? "'bench-s-' || g" : `e.${col}`)).join(', ')}
       FROM generate_series(1, ${PAIRS}) g JOIN tmpl_s t ON t.k = g % ${k}
       JOIN eval_results e ON e.parent_type = 'session_result' AND e.parent_id = t.id AND e.position < 2`,
    );
    await c.query('VACUUM ANALYZE');
    await c.query('CHECKPOINT');
    const sizes = await c.query(
      `SELECT c.relname AS table, c.reltuples::bigint AS rows, pg_total_relation_size(c.oid) AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND c.reltuples > 100 ORDER BY 3 DESC`,
      [SCHEMA],
    );
    return sizes.rows;
  } finally {
    await c.end();
  }
}

async function walNow(c) {
  return BigInt((await c.query("SELECT pg_current_wal_lsn() - '0/0' AS b")).rows[0].b);
}

async function main() {
  const own = process.env.CAMPAIGN_SYNC_BENCH_PG_URL ? undefined : await startServer();
  const url = process.env.CAMPAIGN_SYNC_BENCH_PG_URL ?? own.url;
  try {
    const made = await timed(() => build(url));
    console.log(`mirror: ${RESULTS.toLocaleString('en')} results built in ${seconds(made.ms)}`);
    for (const t of made.out) console.log(`  ${t.table}: ${Number(t.rows).toLocaleString('en')} rows, ${mib(t.bytes)}`);

    const cli = await timed(() =>
      promisify(execFile)('node', [BIN, 'forget', '--db', url, '--pg-schema', SCHEMA, '--user', 'bench-1@example.com', '--yes', '--json']),
    );
    console.log(`forget --user (spawned, with the rewrite): ${seconds(cli.ms)}`);

    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const db = await PgDatabase.open(url, SCHEMA, { connections: 2, mustExist: true });
    try {
      const erase = await timed(() => eraseFromPg(db, { user: 'bench-2@example.com' }));
      const tables = await pendingRewrite(db);
      let wal = await walNow(admin);
      const plain = await timed(() => db.query(`VACUUM ${tables.join(', ')}`));
      const plainWal = (await walNow(admin)) - wal;
      wal = await walNow(admin);
      const full = await timed(() => rewriteErased(db));
      const fullWal = (await walNow(admin)) - wal;
      console.log(`in-process, another person (tables changed: ${tables.join(', ')}):`);
      console.log(`  the erasure's transaction: ${seconds(erase.ms)}`);
      console.log(`  plain VACUUM of those tables (before this change): ${seconds(plain.ms)}, WAL ${mib(plainWal)}`);
      console.log(`  VACUUM FULL of those tables (now): ${seconds(full.ms)}, WAL ${mib(fullWal)}`);
      console.log(`  forget before: ${seconds(erase.ms + plain.ms)}; now: ${seconds(erase.ms + full.ms)}`);
    } finally {
      await db.close();
      await admin.end();
    }
  } finally {
    own?.stop();
  }
}

await main();
