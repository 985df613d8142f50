// Issue 16: the analysts' queries on a 100k-result mirror, with and without the schema-5 indexes, and
// the insert cost of those indexes on a DETAILED pull. See the README's "Views for analysts".
//
//   npm run build && node bench/analyst.js [--records N] [--pull-records N] [--pairs N]
//
// 1. Builds a DETAILED mirror of 10 campaigns x N/10 records from the simulator (in its own process),
//    then times the per-skill-per-campaign average and a lookup by e-mail (median of 5), with the
//    indexes and after dropping them (the "before": schema 4 had none of them).
// 2. Paired timing: pulls of --pull-records DETAILED records into a fresh database with and without
//    the new indexes, alternating, --pairs times.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RequestBudget } from '../dist/api/budget.js';
import { ApiClient } from '../dist/api/client.js';
import { SqliteCheckpoints } from '../dist/store/sqlite/checkpoints.js';
import { openDatabase } from '../dist/store/sqlite/db.js';
import { SqliteSink } from '../dist/store/sqlite/sink.js';
import { runPass } from '../dist/sync/pass.js';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const RECORDS = flag('--records', 100_000);
const PULL_RECORDS = flag('--pull-records', 20_000);
const PAIRS = flag('--pairs', 4);
const SKIP_QUERIES = args.includes('--skip-queries');
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'campaign-sync-analyst-'));
const NEW_INDEXES = [
  'session_results_email',
  'session_results_user',
  'session_results_created',
  'role_results_email',
  'role_results_user',
  'role_results_created',
  'eval_results_campaign_skill',
  'eval_results_skill',
];

function startServer(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', (d) => resolve({ ...JSON.parse(String(d)), child }));
    child.on('error', reject);
  });
}

async function pull(server, dbPath, { dropIndexes = false } = {}) {
  const db = openDatabase(dbPath);
  if (dropIndexes) for (const name of NEW_INDEXES) db.exec(`DROP INDEX ${name}`);
  const state = new SqliteCheckpoints(db);
  const rate = { count: 1_000_000, windowMs: 1000 };
  const client = new ApiClient(
    { baseUrl: new URL(server.url), apiKey: server.apiKey, rate, timeoutMs: 60_000, maxRetries: 3, maxRetryWaitMs: 120_000 },
    { budget: new RequestBudget(rate) },
  );
  const t0 = performance.now();
  try {
    await runPass(
      { client, sink: new SqliteSink(db, state), state },
      { campaigns: [], reportType: 'DETAILED', pageSize: 100, concurrency: 4, full: false },
    );
  } finally {
    await client.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { db, seconds };
}

function median(fn, runs = 5) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

function queries(db, email) {
  const avg = db.prepare('SELECT campaign_id, skill_key, avg(score) FROM eval_results GROUP BY campaign_id, skill_key');
  const lookup = db.prepare('SELECT * FROM results WHERE candidate_email = ?');
  const one = db.prepare('SELECT skill_key, avg(score) FROM eval_results WHERE campaign_id = ? GROUP BY skill_key');
  const campaign = db.prepare('SELECT campaign_id FROM eval_results LIMIT 1').pluck().get();
  return {
    average: median(() => avg.all()),
    averageOneCampaign: median(() => one.all(campaign)),
    byEmail: median(() => lookup.all(email)),
  };
}

const out = {};
const big = SKIP_QUERIES ? null : await startServer({ seed: 16, campaigns: 10, records: RECORDS / 10 });
if (big)
  try {
    const { db, seconds } = await pull(big, join(work, 'big.db'));
    const email = db.prepare('SELECT user_email FROM role_results LIMIT 1').pluck().get();
    out.mirror = {
      results: db.prepare('SELECT count(*) FROM results').pluck().get(),
      evalRows: db.prepare('SELECT count(*) FROM eval_results').pluck().get(),
      mb: Math.round(statSync(join(work, 'big.db')).size / 1e5) / 10,
      pullSeconds: Math.round(seconds * 10) / 10,
    };
    out.after = queries(db, email);
    for (const name of NEW_INDEXES) db.exec(`DROP INDEX ${name}`);
    out.before = queries(db, email);
    db.close();
  } finally {
    big?.child.kill();
  }

const small = await startServer({ seed: 17, campaigns: 2, records: PULL_RECORDS });
try {
  out.pull = [];
  for (let i = 0; i < PAIRS; i++) {
    // Alternate which goes first, so a warm cache or a busy neighbour does not favour one side.
    const order = i % 2 === 0 ? [false, true] : [true, false];
    const t = {};
    for (const drop of order) {
      const r = await pull(small, join(work, `${drop ? 'without' : 'with'}-${i}.db`), { dropIndexes: drop });
      r.db.close();
      t[drop] = r.seconds;
    }
    const w = { seconds: t.false };
    const wo = { seconds: t.true };
    out.pull.push({ withIndexes: w.seconds, withoutIndexes: wo.seconds });
  }
} finally {
  small.child.kill();
}
rmSync(work, { recursive: true, force: true });
console.log(JSON.stringify(out, null, 2));
