// A fleet on one PostgreSQL mirror: the wall time of a backfill (a first pull of every campaign) by
// 1, 2 and 3 worker processes started together, each with a state folder of its own, against one
// simulator whose answers take a network's latency; once with a budget that does not bind (the
// workers' streams at once set the pace) and once with one that does (the shared budget sets it, so
// more workers cannot make it faster: they must not make it slower either).
//
//   node bench/fleet.js [--campaigns N] [--records N] [--latency MS]      (after `npm run build`)
//   node bench/fleet.js --staleness [--workers 3] [--campaigns 1000] [--active 20] [--scale 20] [--hours 1]
//     freshness at scale instead: watch workers sharing the service's budget (fleetStaleness below)
//
// The server: CAMPAIGN_SYNC_BENCH_PG_URL or CAMPAIGN_SYNC_TEST_PG_URL if set, else a throwaway one
// (bench/pg.js startServer), removed at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSimulator } from '../dist/simulator/server.js';
import { startServer } from './pg.js';

const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));

function pull(sim, url, schema, rate) {
  const home = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-fleet-'));
  const args = [
    'pull',
    '--quiet',
    '--pg-schema',
    schema,
    '--base-url',
    sim.url,
    '--page-size',
    '50',
    '--concurrency',
    '2',
    '--rate-limit',
    rate,
  ];
  const env = { ...process.env, HOME: home, XDG_STATE_HOME: join(home, 'state'), CAMPAIGN_SYNC_API_KEY: sim.apiKey, CAMPAIGN_SYNC_DB: url };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      rmSync(home, { recursive: true, force: true });
      if (code === 0) resolve();
      else reject(new Error(`a worker exited ${code}: ${err.trim()}`));
    });
  });
}

/** Wall time (ms) of a backfill of `campaigns` x `records` by `workers` pulls started together. */
export async function fleetBackfill({ url, workers, campaigns, records, latencyMs, rate }) {
  const sim = await startSimulator({ campaigns, records, faults: { slow: 1 }, slowMs: latencyMs, cachePages: true });
  const schema = `bench_fleet_${process.pid}_${workers}_${Date.now().toString(36)}`;
  try {
    const started = performance.now();
    await Promise.all(Array.from({ length: workers }, () => pull(sim, url, schema, rate)));
    const { requests, firstRequestAt, lastRequestAt } = sim.stats;
    return { ms: performance.now() - started, requests, overlaps: sim.stats.streamOverlaps, spanMs: lastRequestAt - firstRequestAt };
  } finally {
    await sim.close();
  }
}

const percentile = (xs, p) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/**
 * Freshness at scale: `workers` watch processes (each a "host" with its own state folder) on one
 * PostgreSQL schema, `campaigns` campaigns of which `active` receive 20 results an hour each, the
 * service's budget (100/1m) shared by all, a 2-minute interval and a 30-minute --max-staleness, all
 * scaled down in time by `scale` (as bench/schedule.js). Polled every `pollMs`: each stream's age
 * since its last successful check (the staleness), each new result's arrival → commit, the 429s and
 * the share of the budget used. Times are reported simulated (real × scale).
 */
export async function fleetStaleness({ url, workers = 3, campaigns = 1000, active = 20, scale = 20, hours = 1, pollMs = 250 }) {
  const MINUTE = 60_000;
  const rate = { count: 100, windowMs: MINUTE / scale };
  const intervalMs = (2 * MINUTE) / scale;
  const maxStalenessMs = (30 * MINUTE) / scale;
  const durationMs = (hours * 60 * MINUTE) / scale;
  const sim = await startSimulator({
    seed: 17,
    campaigns,
    records: 5,
    rateLimit: rate,
    growth: { count: 20, windowMs: (60 * MINUTE) / scale },
    growthCampaigns: active,
  });
  // A stream per campaign of a type with results (the others are listed, not synced).
  const expected = sim.data.campaigns.filter((c) => c.type === 'SESSION_COMPLETION' || c.type === 'ROLE_SUBMISSION').length;
  const schema = `bench_fleet_fresh_${process.pid}_${Date.now().toString(36)}`;
  const started = Date.now();
  const startIso = new Date(sim.data.startedAt).toISOString();
  const children = Array.from({ length: workers }, () => {
    const home = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-fleet-'));
    const args = ['watch', '--quiet', '--pg-schema', schema, '--base-url', sim.url, '--rate-limit', `${rate.count}/${rate.windowMs}ms`];
    args.push('--interval', `${intervalMs}ms`, '--max-staleness', `${maxStalenessMs}ms`);
    const env = {
      ...process.env,
      HOME: home,
      XDG_STATE_HOME: join(home, 'state'),
      CAMPAIGN_SYNC_API_KEY: sim.apiKey,
      CAMPAIGN_SYNC_DB: url,
    };
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    return { child, home, err: () => err, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const ages = [];
  let worst = 0;
  const seen = new Map(); // result id -> { arrived, committed }
  let polling = false;
  let warmAt;
  const poll = async () => {
    if (polling) return;
    polling = true;
    try {
      const now = Date.now();
      const streams = (await client.query(`SELECT last_success_at FROM ${schema}.sync_state`)).rows;
      const rows = (
        await client.query(
          `SELECT id, created_at FROM ${schema}.session_results WHERE created_at >= $1 UNION ALL SELECT id, created_at FROM ${schema}.role_results WHERE created_at >= $1`,
          [startIso],
        )
      ).rows;
      for (const r of rows) if (!seen.has(r.id)) seen.set(r.id, { arrived: new Date(r.created_at).getTime(), committed: now });
      // Warmed up once every stream has been checked: from then on the watches know which are active.
      if (warmAt === undefined && streams.length >= expected && streams.every((s) => s.last_success_at !== null)) warmAt = now;
      const all = streams.map((s) => now - (s.last_success_at === null ? started : new Date(s.last_success_at).getTime()));
      for (let i = streams.length; i < expected; i++) all.push(now - started); // not listed yet
      ages.push(...all);
      worst = Math.max(worst, ...all);
    } catch {
      // The schema is not there yet.
    } finally {
      polling = false;
    }
  };
  const timer = setInterval(poll, pollMs);
  await new Promise((r) => setTimeout(r, durationMs));
  clearInterval(timer);
  await poll();
  for (const w of children) w.child.kill('SIGTERM');
  const codes = await Promise.all(children.map((w) => w.exited));
  await client.end();
  const requests = sim.stats.requests;
  const elapsed = sim.stats.lastRequestAt - sim.stats.firstRequestAt;
  await sim.close();
  for (const w of children) rmSync(w.home, { recursive: true, force: true });
  // Results that arrived two intervals and a pass before the end should be mirrored.
  const cutoff = started + durationMs - 3 * intervalMs;
  const arrived = [...seen.values()].filter((s) => s.arrived <= cutoff);
  const delays = arrived.map((s) => s.committed - s.arrived);
  // After the first check of every stream: a result's stream has been seen receiving, or is checked in turn.
  const warmDelays = arrived.filter((s) => warmAt !== undefined && s.arrived >= warmAt).map((s) => s.committed - s.arrived);
  return {
    scale,
    hours,
    workers,
    campaigns,
    active,
    rate: `${rate.count}/${rate.windowMs / 1000}s`,
    maxStalenessMs,
    throttled: sim.stats.byStatus[429] ?? 0,
    requests,
    budgetUse: (requests - rate.count) / ((elapsed / rate.windowMs) * rate.count),
    stalenessP50Ms: percentile(ages, 50),
    stalenessP95Ms: percentile(ages, 95),
    stalenessMaxMs: worst,
    mirrored: delays.length,
    p95DelayMs: percentile(delays, 95),
    warmupMs: warmAt === undefined ? Number.NaN : warmAt - started,
    mirroredWarm: warmDelays.length,
    p50DelayWarmMs: percentile(warmDelays, 50),
    p95DelayWarmMs: percentile(warmDelays, 95),
    exits: codes,
    errors: children.map((w) => w.err().trim()).filter(Boolean),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--staleness')) {
  const args = process.argv.slice(2);
  const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const given = process.env.CAMPAIGN_SYNC_BENCH_PG_URL || process.env.CAMPAIGN_SYNC_TEST_PG_URL;
  const server = given ? undefined : await startServer();
  try {
    const r = await fleetStaleness({
      url: given || server.url,
      workers: flag('--workers', 3),
      campaigns: flag('--campaigns', 1000),
      active: flag('--active', 20),
      scale: flag('--scale', 20),
      hours: flag('--hours', 1),
    });
    const sim = (ms) => `${((ms * r.scale) / 60_000).toFixed(1)} min`;
    console.log(
      `fleet freshness: ${r.workers} workers, ${r.campaigns} campaigns (${r.active} receiving 20 results/h each), budget 100/1m, interval 2m, max-staleness 30m, ${r.hours} h, scaled ${r.scale}x (budget ${r.rate})`,
    );
    console.log(
      `  staleness of a stream (simulated): p50 ${sim(r.stalenessP50Ms)}, p95 ${sim(r.stalenessP95Ms)}, max ${sim(r.stalenessMaxMs)} (max-staleness ${sim(r.maxStalenessMs)})`,
    );
    console.log(`  arrival -> commit p95 (simulated): ${sim(r.p95DelayMs)} over ${r.mirrored} results`);
    console.log(
      `  after every stream's first check (${sim(r.warmupMs)} in): arrival -> commit p50 ${sim(r.p50DelayWarmMs)}, p95 ${sim(r.p95DelayWarmMs)} over ${r.mirroredWarm} results`,
    );
    console.log(`  budget used: ${(r.budgetUse * 100).toFixed(1)}% of the limit; 429 responses: ${r.throttled} of ${r.requests} requests`);
    console.log(
      `  workers' exits on SIGTERM: ${r.exits.join(', ')}${r.errors.length ? `; stderr: ${r.errors.join(' | ').slice(0, 400)}` : ''}`,
    );
  } finally {
    server?.stop();
  }
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const flag = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const campaigns = flag('--campaigns', 12);
  const records = flag('--records', 1000);
  const latencyMs = flag('--latency', 50);
  const given = process.env.CAMPAIGN_SYNC_BENCH_PG_URL || process.env.CAMPAIGN_SYNC_TEST_PG_URL;
  const server = given ? undefined : await startServer();
  // Pages of 50, one list per worker: the budget that binds spreads the requests over about a minute
  // (a short window, so that no first window's burst covers them all).
  const pages = campaigns * Math.ceil(records / 50 + 1);
  const budgets = [
    ['does not bind', '100000/1m'],
    ['binds', `${Math.max(2, Math.ceil(pages / 20))}/3s`],
  ];
  try {
    console.log('| budget | workers | wall s | requests | share of the budget used | overlapping requests of one stream |');
    console.log('|---|---|---|---|---|---|');
    for (const [what, rate] of budgets) {
      for (const workers of [1, 2, 3]) {
        const r = await fleetBackfill({ url: given || server.url, workers, campaigns, records, latencyMs, rate });
        // From the first request to the last, at the server: after the first window's burst, n requests need (n - N) / N windows.
        const [n, per] = rate.split('/');
        const windowMs = Number.parseFloat(per) * (per.endsWith('m') ? 60_000 : 1000);
        const use = what === 'binds' ? `${((100 * (r.requests - Number(n))) / ((r.spanMs / windowMs) * Number(n))).toFixed(1)}%` : '-';
        console.log(`| ${what} (${rate}) | ${workers} | ${(r.ms / 1000).toFixed(1)} | ${r.requests} | ${use} | ${r.overlaps} |`);
      }
    }
  } finally {
    server?.stop();
  }
}
