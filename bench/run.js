// `npm run bench`: every performance target (docs/performance.md), each with its measured ratio and
// ✓/✗, from one run, then a summary table of all of them. See docs/performance.md.
//
//   node bench/run.js [--records N] [--memory-records N] [--skip-memory] [--skip-budget]
//                     [--skip-schedule] [--schedule-scale 10] [--schedule-hours 2]
//                     [--process-rounds 21] [--pull-rounds 9] [--scaling [10000,100000,500000]]
//                     [--skip-pg] [--pg-records N] [--only session,overall,detailed,process,memory]
//
// 1. Pull vs floor, per record kind (session ≤ 1.3×, role OVERALL ≤ 1.5×, role DETAILED ≤ 1.3×): a
//    pull into a fresh database against pre-rendered pages, versus the floor measured in the same
//    round: JSON.parse of the same page bodies, building the same rows, and inserting them with
//    prepared statements in one transaction (better-sqlite3, no HTTP). Paired rounds (9 after a
//    warm-up), median ratio, and the rounds' lowest and highest.
// 2. Whole processes against `node -e 0`, interleaved (bench/process.js): a no-op pull ≤ 4×,
//    `status` ≤ 2×, `--help` < 3×.
// 3. Budget: with the server's limit equal to the client's budget (20/1s), a backlog drains at >= 95%
//    of the limit's throughput with zero 429 responses.
// 4. Peak RSS of a 1,000,000-record pull (the CLI in its own process) < 200 MB.
// 5. The --max-staleness scheduler of watch (bench/schedule.js): zero 429, no stream older than
//    max-staleness, every arrived result mirrored; p50/p95 arrival → commit.
// 6. Export CSV vs `sqlite3 -csv` ≤ 2×, when bench/export.js exists and exports exportVsSqlite.
// 7. PostgreSQL team mirror (bench/pg.js): the same pull into PostgreSQL and into SQLite,
//    per record kind, PostgreSQL/SQLite ≤ 2×, when a server is available (CAMPAIGN_SYNC_BENCH_PG_URL,
//    CAMPAIGN_SYNC_TEST_PG_URL, or a throwaway initdb); "skipped: no server" otherwise.
//    --skip-pg leaves it out; --pg-records N (default 10,000 per kind).
// 8. With --scaling: a role OVERALL pull's cost per record at 10k/100k/500k records.
//
// --only runs just the parts named (pull kinds `session`, `overall`, `detailed`; `process` for the
// whole processes; `memory` for the million-record pull), to measure one of them again without the others.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { createClient } from '../dist/app/client.js';
import { startSimulator } from '../dist/simulator/server.js';
import { SqliteCheckpoints } from '../dist/store/sqlite/checkpoints.js';
import { openDatabase } from '../dist/store/sqlite/db.js';
import { DriftLedger } from '../dist/store/sqlite/drift-ledger.js';
import { Database } from '../dist/store/sqlite/driver.js';
import { SqliteSink } from '../dist/store/sqlite/sink.js';
import { DriftTracker } from '../dist/sync/drift.js';
import { runPass } from '../dist/sync/pass.js';
import { peakRssMb } from './peak-rss.js';
import { wholeProcess } from './process.js';
import { scaling } from './scaling.js';
import { scheduleBench, scheduleReport } from './schedule.js';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const RECORDS = flag('--records', 20_000);
const MEMORY_RECORDS = flag('--memory-records', 1_000_000);
// Measured rounds of each pull kind, after one warm-up. Nine, not five: a round's ratio moves by up to
// ±0.3× on this VM, and the median of nine moves about three quarters as much as the median of five.
const PULL_ROUNDS = flag('--pull-rounds', 9);
const onlyAt = args.indexOf('--only');
const ONLY = onlyAt >= 0 ? new Set(String(args[onlyAt + 1] ?? '').split(',')) : undefined;
/** Whether a part runs: every part, unless --only names some. */
const runs = (part) => ONLY === undefined || ONLY.has(part);
const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-'));
const results = {};

function startServer(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', (d) => resolve({ ...JSON.parse(String(d)), child }));
    child.on('error', reject);
  });
}

/**
 * The client a command builds (app/client.ts): its budget records every request in the ledger of a
 * state folder of the bench's own, as a real pull does.
 */
function clientFor(server) {
  const rate = { count: 1_000_000, windowMs: 1000 };
  process.env.XDG_STATE_HOME = join(work, 'state');
  return createClient({
    baseUrl: new URL(server.url),
    apiKey: server.apiKey,
    rate,
    timeoutMs: 60_000,
    maxRetries: 3,
    maxRetryWaitMs: 120_000,
  });
}

/** Every page body of a stream, as the server sends them (also fills the server's page cache). */
async function fetchBodies(server, path, campaignId, reportType) {
  const bodies = [];
  let after;
  for (;;) {
    const q = new URLSearchParams({ campaign_id: campaignId, sort: 'asc', limit: '100' });
    if (reportType) q.set('report_type', reportType);
    if (after !== undefined) q.set('starting_after', after);
    const res = await request(`${server.url}${path}?${q}`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    const text = await res.body.text();
    bodies.push(text);
    const page = JSON.parse(text);
    if (!page.has_more) return bodies;
    after = String(page.last_record_index);
  }
}

/** The floor: JSON.parse + the same rows + one transaction of prepared inserts. No HTTP. */
function floor(bodies, kind) {
  // The mirror's own tables, indexes and pragmas: the floor stores the same rows in the same place.
  const db = openDatabase(join(work, `floor-${kind}-${Date.now()}.db`));
  // The last column of each, change_seq (schema 8): the floor leaves it NULL.
  const session = db.prepare('INSERT INTO session_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)');
  const role = db.prepare('INSERT INTO role_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)');
  const detail = db.prepare('INSERT INTO score_details VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const evalRow = db.prepare('INSERT INTO eval_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const evals = (type, parent, list, campaign) => {
    let position = 0;
    for (const e of list)
      evalRow.run(
        type,
        parent,
        e.evaluation_id,
        e.skill.key,
        e.skill.label,
        Number(e.score),
        e.score,
        e.rationale,
        e.evaluated_at,
        campaign,
        position++,
      );
  };
  const started = performance.now();
  db.transaction(() => {
    for (const body of bodies) {
      for (const r of JSON.parse(body).data) {
        const cefr = r.additional_scores?.cefr?.score ?? null;
        const extra = r.additional_scores == null ? null : JSON.stringify(r.additional_scores);
        if (kind === 'session') {
          session.run(
            r.id,
            r.campaign.id,
            r.user.id,
            r.user.email,
            r.session.id,
            r.scenario.id,
            r.scenario.name,
            r.scenario.type.key,
            r.score,
            cefr,
            r.feedback == null ? null : JSON.stringify(r.feedback),
            extra,
            r.created_at,
            r.updated_at,
            r.order_index,
            JSON.stringify(r),
          );
          evals('session_result', r.id, r.eval_results, r.campaign.id);
        } else {
          role.run(
            r.id,
            r.campaign.id,
            r.user.id,
            r.user.email,
            r.recommendation_status,
            r.overall_score,
            cefr,
            extra,
            kind === 'detailed' ? 'DETAILED' : 'OVERALL',
            r.created_at,
            r.updated_at,
            r.order_index,
            // The mirror stores a DETAILED record once (schema 6): its raw without the score details.
            JSON.stringify(kind === 'detailed' ? { ...r, score_details: [] } : r),
          );
          let position = 0;
          for (const d of r.score_details ?? []) {
            detail.run(
              d.id,
              r.id,
              r.campaign.id,
              d.user.id,
              d.user.email,
              d.scenario.id,
              d.scenario.name,
              d.scenario.type.key,
              d.session.id,
              d.score,
              d.feedback == null ? null : JSON.stringify(d.feedback),
              d.created_at,
              d.updated_at,
              JSON.stringify({ ...d, eval_results: [] }),
              position++,
            );
            evals('score_detail', d.id, d.eval_results, r.campaign.id);
          }
        }
      }
    }
  })();
  const ms = performance.now() - started;
  db.close();
  return ms;
}

async function pullVsFloor() {
  const server = await startServer({ seed: 7, campaigns: 2, records: RECORDS });
  try {
    const list = JSON.parse(
      await (await request(`${server.url}/v1/campaigns`, { headers: { authorization: `Bearer ${server.apiKey}` } })).body.text(),
    ).data;
    const sessionC = list.find((c) => c.type === 'SESSION_COMPLETION');
    const roleC = list.find((c) => c.type === 'ROLE_SUBMISSION');
    const kinds = [
      {
        kind: 'session',
        label: 'session results',
        target: 1.3,
        campaign: sessionC,
        path: '/v1/campaigns/session/results',
        type: 'session',
        reportType: 'DETAILED',
      },
      {
        kind: 'overall',
        label: 'role results, OVERALL',
        target: 1.5,
        campaign: roleC,
        path: '/v1/campaigns/role/results',
        type: 'role',
        reportType: 'OVERALL',
      },
      {
        kind: 'detailed',
        label: 'role results, DETAILED',
        target: 1.3,
        campaign: roleC,
        path: '/v1/campaigns/role/results',
        type: 'role',
        reportType: 'DETAILED',
      },
    ];
    const rows = [];
    for (const k of kinds.filter((kind) => runs(kind.kind))) {
      const bodies = await fetchBodies(server, k.path, k.campaign.id, k.type === 'role' ? k.reportType : undefined);
      const bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
      const pulls = [];
      const floors = [];
      // PULL_ROUNDS rounds of each, interleaved, after one warm-up of each. The machine's speed drifts
      // (a VM's CPU can vary by a third from one minute to the next), so the ratio reported is the
      // median of each round's pull/floor, taken back to back; the spread of the rounds is printed too.
      for (let round = 0; round <= PULL_ROUNDS; round++) {
        const dbPath = join(work, `pull-${k.kind}-${round}.db`);
        const db = openDatabase(dbPath);
        const state = new SqliteCheckpoints(db);
        const client = clientFor(server);
        const t0 = performance.now();
        // As a pull does: each page's field paths and enumeration values walked (sync/drift.ts).
        const ledger = new DriftLedger(db);
        const drift = new DriftTracker(async (stream) => ledger.known(stream), 'warn');
        const result = await runPass(
          { client, sink: new SqliteSink(db, state), state, drift },
          { campaigns: [k.campaign.id], type: k.type, reportType: k.reportType, pageSize: 100, concurrency: 4, full: false },
        );
        const ms = performance.now() - t0;
        await client.close();
        db.close();
        if (result.records !== RECORDS) throw new Error(`pull read ${result.records} records, expected ${RECORDS}`);
        const f = floor(bodies, k.kind);
        if (round > 0) {
          pulls.push(ms);
          floors.push(f);
        }
      }
      const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const pull = median(pulls);
      const fl = median(floors);
      const ratios = pulls.map((p, i) => p / floors[i]);
      rows.push({
        kind: k.label,
        target: k.target,
        records: RECORDS,
        mb: bytes / 1e6,
        pullMs: pull,
        floorMs: fl,
        recordsPerSec: RECORDS / (pull / 1000),
        mbPerSec: bytes / 1e6 / (pull / 1000),
        ratio: median(ratios),
        lowest: Math.min(...ratios),
        highest: Math.max(...ratios),
        rounds: ratios.length,
      });
    }
    return rows;
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** Peak RSS (VmHWM) of a CLI pull of `records` records, polled from /proc. */
async function memory(records) {
  const perCampaign = Math.ceil(records / 4);
  const server = await startServer({ seed: 3, campaigns: 4, records: perCampaign, cachePages: false });
  try {
    const db = join(work, 'memory.db');
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, 'pull', '--db', db, '--rate-limit', '1000000/1s', '--quiet'], {
      env: { ...process.env, CAMPAIGN_SYNC_BASE_URL: server.url, CAMPAIGN_SYNC_API_KEY: server.apiKey },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const peakMb = await peakRssMb(child, 50);
    const stored = new Database(db, { readonly: true });
    const count = stored.prepare('SELECT (SELECT count(*) FROM session_results) + (SELECT count(*) FROM role_results)').pluck().get();
    stored.close();
    return { records: count, peakMb, seconds: (performance.now() - started) / 1000 };
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** A backlog drained with the budget equal to the server's limit. */
async function budget() {
  const rate = { count: 20, windowMs: 1000 };
  const sim = await startSimulator({ seed: 5, campaigns: 8, records: 1000, rateLimit: rate });
  const db = openDatabase(join(work, 'budget.db'));
  const state = new SqliteCheckpoints(db);
  process.env.XDG_STATE_HOME = join(work, 'state');
  const client = createClient({
    baseUrl: new URL(sim.url),
    apiKey: sim.apiKey,
    rate,
    timeoutMs: 30_000,
    maxRetries: 5,
    maxRetryWaitMs: 120_000,
  });
  const t0 = performance.now();
  const result = await runPass(
    { client, sink: new SqliteSink(db, state), state },
    { campaigns: [], reportType: 'OVERALL', pageSize: 25, concurrency: 8, full: false },
  );
  const elapsed = (performance.now() - t0) / 1000;
  await client.close();
  db.close();
  await sim.close();
  // Requests per second over the drain, from the server's own clock: (n - 1) requests fit between
  // the first and the last arrival. A limiter exactly at the limit scores 100%.
  const total = sim.stats.requests;
  const perSecond = (total - 1) / ((sim.stats.lastRequestAt - sim.stats.firstRequestAt) / 1000);
  const limit = rate.count / (rate.windowMs / 1000);
  return {
    requests: total,
    seconds: elapsed,
    perSecond,
    share: perSecond / limit,
    throttled: sim.stats.byStatus[429] ?? 0,
    records: result.records,
  };
}

const f1 = (n) => n.toFixed(1);
const f0 = (n) => Math.round(n).toLocaleString('en-US');
const mark = (ok) => (ok ? '✓' : '✗');
/** Every target of the run: [name, measured, target, ok], for the summary table. */
const targets = [];
const target = (name, measured, goal, ok) => targets.push([name, measured, goal, ok]);
const numberFlag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined && !args[i + 1].startsWith('--') ? Number(args[i + 1]) : fallback;
};
try {
  console.log(
    `campaign-sync bench — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  results.pull = await pullVsFloor();
  console.log(
    '| records | kind | body MB | pull ms (median) | floor ms (median) | records/s | MB/s | pull/floor (median of rounds) | rounds, lowest–highest |',
  );
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results.pull) {
    const ok = r.ratio <= r.target;
    console.log(
      `| ${f0(r.records)} | ${r.kind} | ${f1(r.mb)} | ${f0(r.pullMs)} | ${f0(r.floorMs)} | ${f0(r.recordsPerSec)} | ${f1(r.mbPerSec)} | ${r.ratio.toFixed(2)}× ${mark(ok)} (target ≤ ${r.target}×) | ${r.rounds}, ${r.lowest.toFixed(2)}–${r.highest.toFixed(2)}× |`,
    );
    target(`pull/floor, ${r.kind}`, `${r.ratio.toFixed(2)}×`, `≤ ${r.target}×`, ok);
  }

  const p = runs('process') ? await wholeProcess({ rounds: numberFlag('--process-rounds', 21) }) : undefined;
  results.process = p;
  if (p !== undefined) {
    console.log(`\nwhole processes vs \`node -e 0\` (${f0(p.nodeMs)} ms), median of ${p.rounds} interleaved rounds:`);
    console.log(`  no-op pull (6 campaigns, --quiet): ${f0(p.pullMs)} ms = ${p.pull.toFixed(2)}× ${mark(p.pull <= 4)} (target ≤ 4×)`);
    console.log(`  status: ${f0(p.statusMs)} ms = ${p.status.toFixed(2)}× ${mark(p.status <= 2)} (target ≤ 2×)`);
    console.log(`  --help: ${f0(p.helpMs)} ms = ${p.help.toFixed(2)}× ${mark(p.help < 3)} (target < 3×)`);
    target('no-op pull vs node -e 0', `${p.pull.toFixed(2)}×`, '≤ 4×', p.pull <= 4);
    target('status vs node -e 0', `${p.status.toFixed(2)}×`, '≤ 2×', p.status <= 2);
    target('--help vs node -e 0', `${p.help.toFixed(2)}×`, '< 3×', p.help < 3);
  }

  if (ONLY === undefined && !args.includes('--skip-budget')) {
    results.budget = await budget();
    const b = results.budget;
    console.log(
      `\nbudget 20/1s against a server limited to 20/1s: ${b.requests} requests in ${f1(b.seconds)} s, ${b.perSecond.toFixed(2)} requests/s at the server = ${(b.share * 100).toFixed(1)}% of the limit ${mark(b.share >= 0.95)}; 429 responses: ${b.throttled} ${mark(b.throttled === 0)}`,
    );
    target('budget drain, share of the limit', `${(b.share * 100).toFixed(1)}%`, '≥ 95%', b.share >= 0.95);
    target('budget drain, 429 responses', String(b.throttled), '0', b.throttled === 0);
  }
  if (ONLY === undefined ? !args.includes('--skip-memory') : ONLY.has('memory')) {
    results.memory = await memory(MEMORY_RECORDS);
    const m = results.memory;
    console.log(
      `\npeak RSS of a ${f0(m.records)}-record pull (CLI process): ${f1(m.peakMb)} MB ${mark(m.peakMb < 200)} (target < 200 MB; ${f1(m.seconds)} s, ${f0(m.records / m.seconds)} records/s)`,
    );
    target(`peak RSS, ${f0(m.records)}-record pull`, `${f1(m.peakMb)} MB`, '< 200 MB', m.peakMb < 200);
  }
  if (ONLY === undefined && !args.includes('--skip-schedule')) {
    console.log('');
    const r = await scheduleBench({ scale: numberFlag('--schedule-scale', 10), hours: numberFlag('--schedule-hours', 2) });
    results.schedule = r;
    const report = scheduleReport(r);
    for (const line of report.lines) console.log(line);
    const s = (ms) => `${Math.round((ms * r.scale) / 1000)} s`;
    target('scheduler: 429 responses', String(r.throttled), '0', report.checks.throttled);
    target('scheduler: oldest stream (simulated)', s(r.worstAgeMs), `≤ ${s(r.maxStalenessMs)}`, report.checks.staleness);
    target('scheduler: arrived results mirrored', `${r.mirrored}/${r.arrived}`, 'all', report.checks.mirrored);
    target('scheduler: arrival → commit p50 / p95 (simulated)', `${s(r.p50DelayMs)} / ${s(r.p95DelayMs)}`, '(reported)', undefined);
  }
  // Another helper owns bench/export.js; when it is there, its figure joins the table.
  const exportBench = fileURLToPath(new URL('./export.js', import.meta.url));
  if (ONLY === undefined && existsSync(exportBench)) {
    const mod = await import(exportBench);
    if (typeof mod.exportVsSqlite === 'function') {
      const e = await mod.exportVsSqlite();
      const ratio = typeof e === 'number' ? e : e.ratio;
      results.export = e;
      console.log(`\nexport CSV vs sqlite3 -csv: ${ratio.toFixed(2)}× ${mark(ratio <= 2)} (target ≤ 2×)`);
      target('export CSV vs sqlite3 -csv', `${ratio.toFixed(2)}×`, '≤ 2×', ratio <= 2);
    }
  }
  if (ONLY === undefined && !args.includes('--skip-pg')) {
    const { pgThroughput } = await import('./pg.js');
    const pgRun = await pgThroughput({ records: numberFlag('--pg-records', 10_000) });
    results.pg = pgRun;
    if (pgRun.skipped) {
      console.log(`\nPostgreSQL team mirror vs SQLite: skipped: ${pgRun.skipped}`);
      target('PostgreSQL/SQLite pull', 'skipped: no server', '≤ 2×', undefined);
    } else {
      console.log('\nPostgreSQL team mirror vs SQLite, the same pull (median of paired rounds):');
      for (const r of pgRun.rows) {
        console.log(`  ${r.kind}: ${f0(r.pgMs)} / ${f0(r.sqliteMs)} ms = ${r.ratio.toFixed(2)}× ${mark(r.ratio <= 2)} (target ≤ 2×)`);
        target(`PostgreSQL/SQLite pull, ${r.kind}`, `${r.ratio.toFixed(2)}×`, '≤ 2×', r.ratio <= 2);
      }
    }
  }
  if (args.includes('--scaling')) {
    const i = args.indexOf('--scaling');
    const given = args[i + 1] !== undefined && !args[i + 1].startsWith('--') ? args[i + 1].split(',').map(Number) : undefined;
    console.log('');
    results.scaling = await scaling({ sizes: given, work, log: (line) => console.log(line) });
  }

  console.log('\n| target | measured | goal | |');
  console.log('|---|---:|---:|:---:|');
  for (const [name, measured, goal, ok] of targets)
    console.log(`| ${name} | ${measured} | ${goal} | ${ok === undefined ? '' : mark(ok)} |`);
  // A figure only reported (ok undefined) is not a target.
  const judged = targets.filter((t) => t[3] !== undefined);
  const failed = judged.filter((t) => !t[3]).length;
  console.log(`\n${judged.length - failed} of ${judged.length} targets met`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
