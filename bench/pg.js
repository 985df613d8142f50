// The team mirror's throughput: the same pull into SQLite and into a local PostgreSQL,
// in-process against the simulator's pre-rendered pages, per record kind; the target is PostgreSQL
// within 2x of SQLite.
//
//   node bench/pg.js [--records N] [--rounds N]      (after `npm run build`)
//
// The server: CAMPAIGN_SYNC_BENCH_PG_URL if set, else a throwaway one (initdb + pg_ctl, default
// settings: fsync and synchronous_commit on) on a free loopback port, removed at the end.
// `benchPg({ url, records, rounds })` runs the same from another script and returns the figures;
// `pgThroughput({ records, rounds })` finds or starts the server too (npm run bench), and says
// `{ skipped }` with the reason when there is none.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { RequestBudget } from '../dist/api/budget.js';
import { ApiClient } from '../dist/api/client.js';
import { startSimulator } from '../dist/simulator/server.js';
import { openPgMirror } from '../dist/store/pg/open.js';
import { SqliteCheckpoints } from '../dist/store/sqlite/checkpoints.js';
import { openDatabase } from '../dist/store/sqlite/db.js';
import { SqliteSink } from '../dist/store/sqlite/sink.js';
import { runPass } from '../dist/sync/pass.js';

const KINDS = [
  { kind: 'session results', type: 'session', reportType: 'DETAILED' },
  { kind: 'role results, OVERALL', type: 'role', reportType: 'OVERALL' },
  { kind: 'role results, DETAILED', type: 'role', reportType: 'DETAILED' },
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function clientFor(sim) {
  const rate = { count: 1_000_000, windowMs: 1000 };
  return new ApiClient(
    { baseUrl: new URL(sim.url), apiKey: sim.apiKey, rate, timeoutMs: 60_000, maxRetries: 3, maxRetryWaitMs: 120_000 },
    { budget: new RequestBudget(rate) },
  );
}

async function timedPass(sim, sink, state, opts) {
  const client = clientFor(sim);
  const started = performance.now();
  try {
    const result = await runPass({ client, sink, state }, opts);
    await sink.close();
    return { ms: performance.now() - started, records: result.records };
  } finally {
    await client.close();
  }
}

/** Pulls `records` records of each kind into SQLite and into PostgreSQL at `url`, `rounds` times each, alternating. */
export async function benchPg({ url, records = 20_000, rounds = 3 }) {
  const work = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-pg-'));
  const sim = await startSimulator({ seed: 'bench', campaigns: 2, records, cachePages: true, unknownTypeCampaigns: 0 });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const out = [];
  try {
    for (const k of KINDS) {
      const opts = { campaigns: [], type: k.type, reportType: k.reportType, pageSize: 100, concurrency: 1, full: false };
      // One campaign of the kind: the simulator has one session and one role campaign.
      const sqlite = [];
      const postgres = [];
      for (let round = 0; round <= rounds; round++) {
        const db = openDatabase(join(work, `${k.type}-${k.reportType}-${round}.db`));
        const state = new SqliteCheckpoints(db);
        const a = await timedPass(sim, new SqliteSink(db, state), state, opts);
        db.close();
        const schema = `bench_${round}`;
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        const m = await openPgMirror(url, schema, 1);
        const b = await timedPass(sim, m.sink, m.state, opts);
        await m.release();
        if (a.records !== records || b.records !== records) throw new Error(`read ${a.records}/${b.records} records, expected ${records}`);
        // Round 0 warms both up (JIT, page cache, the server's catalog).
        if (round > 0) {
          sqlite.push(a.ms);
          postgres.push(b.ms);
        }
      }
      out.push({
        kind: k.kind,
        records,
        sqliteMs: median(sqlite),
        pgMs: median(postgres),
        ratio: median(postgres.map((p, i) => p / sqlite[i])),
      });
    }
  } finally {
    await admin.end();
    await sim.close();
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

function pgBin() {
  const root = '/usr/lib/postgresql';
  const dirs = existsSync(root)
    ? readdirSync(root)
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(root, v, 'bin'))
    : [];
  return [...(process.env.PATH ?? '').split(':'), ...dirs].find((d) => d && existsSync(join(d, 'initdb')));
}

/** A throwaway server with default durability settings; returns its URL and a stop function. */
export async function startServer() {
  const bin = pgBin();
  if (!bin) throw new Error('no initdb found: install postgresql, or set CAMPAIGN_SYNC_BENCH_PG_URL');
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-pgdata-'));
  writeFileSync(join(dir, 'pw'), 'bench\n');
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    chownSync(dir, uid, uid);
    chownSync(join(dir, 'pw'), uid, uid);
  }
  const run = (cmd, args) =>
    root
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, cmd), args, { stdio: 'pipe' });
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const data = join(dir, 'data');
  run('initdb', [
    '-D',
    data,
    '-U',
    'bench',
    `--pwfile=${join(dir, 'pw')}`,
    '--auth-host=scram-sha-256',
    '--auth-local=trust',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1`, 'start']);
  return {
    url: `postgres://bench:bench@127.0.0.1:${port}/postgres`,
    stop: () => {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The server of CAMPAIGN_SYNC_BENCH_PG_URL or CAMPAIGN_SYNC_TEST_PG_URL, else a throwaway one, else the reason there is none. */
export async function pgThroughput({ records = 10_000, rounds = 3 } = {}) {
  const given = process.env.CAMPAIGN_SYNC_BENCH_PG_URL || process.env.CAMPAIGN_SYNC_TEST_PG_URL;
  let server;
  if (!given) {
    try {
      server = await startServer();
    } catch (err) {
      return { skipped: `no server (${String(err.message ?? err).split('\n')[0]})` };
    }
  }
  try {
    return { rows: await benchPg({ url: given || server.url, records, rounds }) };
  } finally {
    server?.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const server = process.env.CAMPAIGN_SYNC_BENCH_PG_URL ? undefined : await startServer();
  try {
    const rows = await benchPg({
      url: process.env.CAMPAIGN_SYNC_BENCH_PG_URL || server.url,
      records: flag('--records', 20_000),
      rounds: flag('--rounds', 3),
    });
    console.log('| kind | records | SQLite ms (median) | PostgreSQL ms (median) | PostgreSQL/SQLite (median of rounds) |');
    console.log('|---|---|---|---|---|');
    for (const r of rows)
      console.log(
        `| ${r.kind} | ${r.records.toLocaleString('en')} | ${r.sqliteMs.toFixed(0)} | ${r.pgMs.toFixed(0)} | ${r.ratio.toFixed(2)}× ${r.ratio <= 2 ? '✓' : '✗ (target ≤ 2×)'} |`,
      );
  } finally {
    server?.stop();
  }
}
