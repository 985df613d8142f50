// A fleet on one PostgreSQL mirror: the wall time of a backfill (a first pull of every campaign) by
// 1, 2 and 3 worker processes started together, each with a state folder of its own, against one
// simulator whose answers take a network's latency; once with a budget that does not bind (the
// workers' streams at once set the pace) and once with one that does (the shared budget sets it, so
// more workers cannot make it faster: they must not make it slower either).
//
//   node bench/fleet.js [--campaigns N] [--records N] [--latency MS]      (after `npm run build`)
//
// The server: CAMPAIGN_SYNC_BENCH_PG_URL or CAMPAIGN_SYNC_TEST_PG_URL if set, else a throwaway one
// (bench/pg.js startServer), removed at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
    return { ms: performance.now() - started, requests: sim.stats.requests, overlaps: sim.stats.streamOverlaps };
  } finally {
    await sim.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
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
    console.log('| budget | workers | wall s | requests | overlapping requests of one stream |');
    console.log('|---|---|---|---|---|');
    for (const [what, rate] of budgets) {
      for (const workers of [1, 2, 3]) {
        const r = await fleetBackfill({ url: given || server.url, workers, campaigns, records, latencyMs, rate });
        console.log(`| ${what} (${rate}) | ${workers} | ${(r.ms / 1000).toFixed(1)} | ${r.requests} | ${r.overlaps} |`);
      }
    }
  } finally {
    server?.stop();
  }
}
