// The scaling curve: a role OVERALL pull's cost per record at 10k, 100k and 500k records
// (the kind whose small records weigh the indexes most), each into a fresh database, from the bench
// server in its own process (pages rendered on demand: 500k cached pages would not fit). This
// process's CPU (user + system) per record is the figure: the wall time also waits for the server,
// which renders each page on the same two cores. Each size also runs variants of the
// database's pragmas, paired with the default in alternating order, to see whether one flattens
// the curve (a variant is only worth adopting in src/store/sqlite/db.ts if it wins at every size).
//
//   node bench/scaling.js [10000,100000,500000]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RequestBudget } from '../dist/api/budget.js';
import { ApiClient } from '../dist/api/client.js';
import { SqliteCheckpoints } from '../dist/store/sqlite/checkpoints.js';
import { openDatabase } from '../dist/store/sqlite/db.js';
import { SqliteSink } from '../dist/store/sqlite/sink.js';
import { runPass } from '../dist/sync/pass.js';

const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));

export const VARIANTS = [
  { name: 'default', pragmas: [] },
  { name: 'cache_size 64 MiB', pragmas: ['cache_size = -65536'] },
  { name: 'wal_autocheckpoint 1,000', pragmas: ['wal_autocheckpoint = 1000'] },
];

function startServer(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', (d) => resolve({ ...JSON.parse(String(d)), child }));
    child.on('error', reject);
  });
}

async function pullOnce(server, campaignId, dbPath, pragmas) {
  const db = openDatabase(dbPath);
  for (const p of pragmas) db.pragma(p);
  const state = new SqliteCheckpoints(db);
  const rate = { count: 1_000_000, windowMs: 1000 };
  const client = new ApiClient(
    { baseUrl: new URL(server.url), apiKey: server.apiKey, rate, timeoutMs: 60_000, maxRetries: 3, maxRetryWaitMs: 120_000 },
    { budget: new RequestBudget(rate) },
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await runPass(
    { client, sink: new SqliteSink(db, state), state },
    { campaigns: [campaignId], type: 'role', reportType: 'OVERALL', pageSize: 100, concurrency: 4, full: false },
  );
  await client.close();
  db.close();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  rmSync(dbPath, { force: true });
  return { records: result.records, ms, userMs: cpu.user / 1000, sysMs: cpu.system / 1000 };
}

/** Per size and variant: µs per record (wall, user, system), and the variant's ratio to the default. */
export async function scaling(options = {}) {
  const sizes = options.sizes ?? [10_000, 100_000, 500_000];
  const log = options.log ?? (() => {});
  const work = mkdtempSync(join(options.work ?? tmpdir(), 'scaling-'));
  const rows = [];
  log('| records | variant | CPU µs/record (user + sys) | user | sys | wall µs/record | CPU vs default (paired rounds, median) |');
  log('|---:|---|---:|---:|---:|---:|---:|');
  try {
    for (const size of sizes) {
      const server = await startServer({ seed: 11, campaigns: 2, records: size, cachePages: false });
      try {
        const list = await (await fetch(`${server.url}/v1/campaigns`, { headers: { authorization: `Bearer ${server.apiKey}` } })).json();
        const role = list.data.find((c) => c.type === 'ROLE_SUBMISSION');
        // Rounds alternate the order of the variants; smaller sizes get more rounds.
        const rounds = size >= 500_000 ? 2 : size >= 100_000 ? 3 : 5;
        const runs = Object.fromEntries(VARIANTS.map((v) => [v.name, []]));
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
          for (const v of order) {
            const r = await pullOnce(server, role.id, join(work, `s-${size}-${round}.db`), v.pragmas);
            if (r.records !== size) throw new Error(`pulled ${r.records} of ${size}`);
            runs[v.name].push(r);
          }
        }
        const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
        const cpu = (r) => r.userMs + r.sysMs;
        for (const v of VARIANTS) {
          const rs = runs[v.name];
          const row = {
            records: size,
            variant: v.name,
            wallUs: (median(rs.map((r) => r.ms)) * 1000) / size,
            userUs: (median(rs.map((r) => r.userMs)) * 1000) / size,
            sysUs: (median(rs.map((r) => r.sysMs)) * 1000) / size,
            cpuUs: (median(rs.map(cpu)) * 1000) / size,
            vsDefault: median(rs.map((r, i) => cpu(r) / cpu(runs.default[i]))),
          };
          rows.push(row);
          log(
            `| ${size.toLocaleString('en-US')} | ${v.name} | ${row.cpuUs.toFixed(1)} | ${row.userUs.toFixed(1)} | ${row.sysUs.toFixed(1)} | ${row.wallUs.toFixed(1)} | ${row.vsDefault.toFixed(2)} |`,
          );
        }
      } finally {
        server.child.kill('SIGTERM');
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sizes = process.argv[2] ? process.argv[2].split(',').map(Number) : undefined;
  await scaling({ sizes, log: (line) => console.log(line) });
}
