// Whole-process costs, each against `node -e 0` on the same machine in the same round:
// a no-op `pull` (6 campaigns, nothing new, the bench server on loopback: target ≤ 4×), `status`
// (≤ 2×) and `--help` (< 3×). Each round runs every command once, in an order that rotates from
// round to round (interleaved: a drift of the machine's speed hits all of them alike); the ratio is
// the median of the rounds' ratios.
//
//   node bench/process.js [--rounds 21]
//
// The pull's request budget is raised (`--rate-limit 1000000/1s`): at the default 100/1m, rounds of
// 7 requests would soon wait for the budget (shared across processes through the ledger), and the
// wait is not what is measured here. The ledger lives in a temporary XDG_STATE_HOME.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function startServer(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', (d) => resolve({ ...JSON.parse(String(d)), child }));
    child.on('error', reject);
  });
}

/** Medians (ms) of each command and of each one's per-round ratio to `node -e 0`. */
export async function wholeProcess(options = {}) {
  const rounds = options.rounds ?? 21;
  const work = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-process-'));
  const server = await startServer({ seed: 1, campaigns: 6, records: 250 });
  const env = { ...process.env, CAMPAIGN_SYNC_API_KEY: server.apiKey, XDG_STATE_HOME: join(work, 'state') };
  const db = join(work, 'noop.db');
  const pullArgs = [BIN, 'pull', '--db', db, '--base-url', server.url, '--rate-limit', '1000000/1s', '--quiet'];
  const commands = {
    node: ['-e', '0'],
    help: [BIN, '--help'],
    pull: pullArgs,
    status: [BIN, 'status', '--db', db],
  };
  const run = (argv) => {
    const t0 = performance.now();
    execFileSync(process.execPath, argv, { stdio: 'ignore', env });
    return performance.now() - t0;
  };
  try {
    run(pullArgs); // The first pull mirrors everything; every later one finds nothing new.
    const names = Object.keys(commands);
    const times = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < rounds + 1; round++) {
      const order = names.map((_, i) => names[(i + round) % names.length]);
      const t = {};
      for (const n of order) t[n] = run(commands[n]);
      if (round === 0) continue; // warm-up
      for (const n of names) times[n].push(t[n]);
    }
    const ratio = (n) => median(times[n].map((t, i) => t / times.node[i]));
    return {
      rounds,
      nodeMs: median(times.node),
      helpMs: median(times.help),
      pullMs: median(times.pull),
      statusMs: median(times.status),
      help: ratio('help'),
      pull: ratio('pull'),
      status: ratio('status'),
    };
  } finally {
    server.child.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--rounds');
  const r = await wholeProcess({ rounds: i >= 0 ? Number(process.argv[i + 1]) : undefined });
  const mark = (ok) => (ok ? '✓' : '✗');
  console.log(`node -e 0: ${r.nodeMs.toFixed(0)} ms (median of ${r.rounds} interleaved rounds)`);
  console.log(`no-op pull: ${r.pullMs.toFixed(0)} ms = ${r.pull.toFixed(2)}× ${mark(r.pull <= 4)} (target ≤ 4×)`);
  console.log(`status:     ${r.statusMs.toFixed(0)} ms = ${r.status.toFixed(2)}× ${mark(r.status <= 2)} (target ≤ 2×)`);
  console.log(`--help:     ${r.helpMs.toFixed(0)} ms = ${r.help.toFixed(2)}× ${mark(r.help < 3)} (target < 3×)`);
}
