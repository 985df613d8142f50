// The --max-staleness scheduler of `watch`, measured end to end: 200 campaigns, only 10
// of them receiving new results, the service's budget (100/1m) and a 2-minute interval, all scaled
// down in time by `scale` (10: budget 100/6s, interval 12s, max-staleness 3m). The simulator runs
// in this process, limited to the same rate; `campaign-sync watch` runs as its own process.
//
//   node bench/schedule.js [--scale 10] [--hours 2] [--campaigns 200] [--active 10] [--interval-minutes 2]
//
// Measured: the delay from a result's arrival at the simulator (its created_at) to its commit in the
// mirror (the first poll of the database, every `pollMs`, that sees it), the 429 answers, the oldest
// any stream's last successful check became (sync_state.last_success_at, polled the same way), and
// the streams each pass checked and left (watch --json). Times are reported in the simulated scale
// (real × scale) and real.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../dist/simulator/server.js';
import { Database } from '../dist/store/sqlite/driver.js';

const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const MINUTE = 60_000;

const percentile = (xs, p) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/** Runs the scenario; resolves to its figures (see the file's header). */
export async function scheduleBench(options = {}) {
  const scale = options.scale ?? 10;
  const hours = options.hours ?? 2;
  const campaigns = options.campaigns ?? 200;
  const active = options.active ?? 10;
  // Each active campaign receives a result every 3 simulated minutes (20 an hour).
  const perHour = options.perHour ?? 20;
  const pollMs = options.pollMs ?? 100;
  const rate = { count: 100, windowMs: MINUTE / scale };
  const intervalMinutes = options.intervalMinutes ?? 2;
  const intervalMs = (intervalMinutes * MINUTE) / scale;
  const maxStalenessMs = (30 * MINUTE) / scale;
  const durationMs = (hours * 60 * MINUTE) / scale;
  const work = mkdtempSync(join(tmpdir(), 'i15-bench-schedule-'));
  const db = join(work, 'watch.db');
  const sim = await startSimulator({
    seed: 13,
    campaigns,
    records: 5,
    rateLimit: rate,
    growth: { count: perHour, windowMs: (60 * MINUTE) / scale },
    growthCampaigns: active,
  });
  const started = Date.now();
  const startIso = new Date(sim.data.startedAt).toISOString();
  const child = spawn(
    process.execPath,
    [
      BIN,
      'watch',
      '--db',
      db,
      '--base-url',
      sim.url,
      '--rate-limit',
      `${rate.count}/${rate.windowMs}ms`,
      '--interval',
      `${intervalMs}ms`,
      '--max-staleness',
      `${maxStalenessMs}ms`,
      '--json',
    ],
    { env: { ...process.env, CAMPAIGN_SYNC_API_KEY: sim.apiKey }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const passes = [];
  let stderr = '';
  let buffered = '';
  child.stdout.on('data', (d) => {
    buffered += d;
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.startsWith('{')) passes.push(JSON.parse(line));
      nl = buffered.indexOf('\n');
    }
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));

  const seen = new Map(); // result id -> { arrived, committed }
  let worstAgeMs = 0;
  let worstStream = '';
  let reader;
  const poll = () => {
    const now = Date.now();
    if (!reader) {
      if (!existsSync(db)) return;
      try {
        reader = new Database(db, { readonly: true, fileMustExist: true });
        reader.pragma('busy_timeout = 1000');
      } catch {
        return;
      }
    }
    let rows;
    let streams;
    try {
      rows = reader
        .prepare(
          'SELECT id, created_at FROM session_results WHERE created_at >= ? UNION ALL SELECT id, created_at FROM role_results WHERE created_at >= ?',
        )
        .all(startIso, startIso);
      streams = reader.prepare('SELECT stream, last_success_at FROM sync_state').all();
    } catch {
      return; // The schema is not there yet.
    }
    for (const r of rows) if (!seen.has(r.id)) seen.set(r.id, { arrived: Date.parse(r.created_at), committed: now });
    // The oldest a stream got: since its last success, or since the start when never checked.
    const ages = streams.map((s) => ({
      stream: s.stream,
      age: now - (s.last_success_at === null ? started : Date.parse(s.last_success_at)),
    }));
    if (streams.length < campaigns) ages.push({ stream: '(not yet listed)', age: now - started });
    for (const a of ages) {
      if (a.age > worstAgeMs) {
        worstAgeMs = a.age;
        worstStream = a.stream;
      }
    }
  };
  const timer = setInterval(poll, pollMs);
  await new Promise((r) => setTimeout(r, durationMs));
  clearInterval(timer);
  poll();
  child.kill('SIGTERM');
  const code = await exited;
  reader?.close();
  await sim.close();
  rmSync(work, { recursive: true, force: true });
  if (passes.length === 0) throw new Error(`watch printed no pass (exit ${code}): ${stderr.slice(0, 500)}`);

  // Every result that arrived at least two intervals plus a pass before the end should be mirrored.
  const cutoff = started + durationMs - 3 * intervalMs;
  const delays = [...seen.values()].filter((s) => s.arrived <= cutoff).map((s) => s.committed - s.arrived);
  const activeCampaigns = sim.data.campaigns.filter((c) => sim.data.grows(c));
  let arrivedBeforeCutoff = 0;
  for (const c of activeCampaigns) {
    arrivedBeforeCutoff += sim.data.count(cutoff, c) - 5;
  }
  const checked = passes.filter((p) => p.checked !== undefined).map((p) => p.checked);
  const unchecked = passes.filter((p) => p.unchecked !== undefined).map((p) => p.unchecked);
  return {
    scale,
    hours,
    campaigns,
    active,
    perHour,
    pollMs,
    rate: `${rate.count}/${rate.windowMs / 1000}s`,
    intervalMinutes,
    intervalMs,
    maxStalenessMs,
    passes: passes.length,
    failedPasses: passes.filter((p) => p.error !== undefined).length,
    requests: sim.stats.requests,
    throttled: sim.stats.byStatus[429] ?? 0,
    arrived: arrivedBeforeCutoff,
    mirrored: delays.length,
    p50DelayMs: percentile(delays, 50),
    p95DelayMs: percentile(delays, 95),
    maxDelayMs: Math.max(...delays),
    worstAgeMs,
    worstStream,
    checked: { min: Math.min(...checked), median: percentile(checked, 50), max: Math.max(...checked) },
    unchecked: { min: Math.min(...unchecked), median: percentile(unchecked, 50), max: Math.max(...unchecked) },
    watchExit: code,
  };
}

/** One line per figure, with ✓/✗ against the targets; `ok` when all hold. */
export function scheduleReport(r) {
  const sim = (ms) => `${((ms * r.scale) / 1000).toFixed(0)} s`;
  const real = (ms) => `${(ms / 1000).toFixed(1)} s real`;
  const lines = [
    `scheduler: ${r.campaigns} campaigns, ${r.active} receiving ${r.perHour} results/h each, budget 100/1m, interval ${r.intervalMinutes}m, max-staleness 30m, ${r.hours} h — scaled ${r.scale}× (budget ${r.rate}, simulator limited the same), polled every ${r.pollMs} ms`,
    `  passes ${r.passes} (${r.failedPasses} failed), streams checked per pass min/median/max ${r.checked.min}/${r.checked.median}/${r.checked.max}, left ${r.unchecked.min}/${r.unchecked.median}/${r.unchecked.max}`,
    `  arrival → commit (simulated): p50 ${sim(r.p50DelayMs)}, p95 ${sim(r.p95DelayMs)}, max ${sim(r.maxDelayMs)} (${real(r.p50DelayMs)} / ${real(r.p95DelayMs)}); ${r.mirrored} of ${r.arrived} arrived results mirrored`,
    `  429 responses: ${r.throttled} of ${r.requests} requests`,
    `  oldest a stream got (simulated): ${sim(r.worstAgeMs)} vs max-staleness ${sim(r.maxStalenessMs)}`,
  ];
  const checks = {
    throttled: r.throttled === 0,
    staleness: r.worstAgeMs <= r.maxStalenessMs,
    mirrored: r.mirrored === r.arrived,
  };
  return { lines, checks, ok: Object.values(checks).every(Boolean) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const flag = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const r = await scheduleBench({
    scale: flag('--scale'),
    hours: flag('--hours'),
    campaigns: flag('--campaigns'),
    active: flag('--active'),
    intervalMinutes: flag('--interval-minutes'),
  });
  const { lines, checks } = scheduleReport(r);
  for (const l of lines) console.log(l);
  for (const [k, v] of Object.entries(checks)) console.log(`  ${k}: ${v ? '✓' : '✗'}`);
}
