// The HTTP side of a pull alone: ApiClient.resultsPage over every page of one stream, in
// sequence, no store, against the bench server in its own process; CPU of this process
// (process.cpuUsage). Two builds can be compared in paired rounds (the order alternating), e.g. a
// copy of dist/ from before a change against dist/:
//
//   node bench/http-client.js [kind=overall|detailed|session] [rounds=11] [A=dist] [B=/path/to/other/dist]
//
// Prints each build's median CPU and the median of the rounds' B/A ratios.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')));
const builds = Object.entries({ A: 'dist', ...args })
  .filter(([k]) => /^[A-Z]$/.test(k))
  .map(([name, dir]) => ({ name, dir: resolve(dir) }));
for (const b of builds) {
  b.RequestBudget = (await import(`${b.dir}/api/budget.js`)).RequestBudget;
  b.ApiClient = (await import(`${b.dir}/api/client.js`)).ApiClient;
}
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const server = await new Promise((res, rej) => {
  const child = spawn(process.execPath, [SERVER, JSON.stringify({ seed: 7, campaigns: 2, records: 20_000 })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout.once('data', (d) => res({ ...JSON.parse(String(d)), child }));
  child.on('error', rej);
});
const kind = args.kind ?? 'overall';
const endpoint = kind === 'session' ? 'session' : 'role';
const rate = { count: 1_000_000, windowMs: 1000 };
const config = { baseUrl: new URL(server.url), apiKey: server.apiKey, rate, timeoutMs: 60_000, maxRetries: 3, maxRetryWaitMs: 120_000 };

async function read(b) {
  const client = new b.ApiClient(config, { budget: new b.RequestBudget(rate) });
  const campaign = (await client.listCampaigns()).find(
    (c) => c.type === (endpoint === 'session' ? 'SESSION_COMPLETION' : 'ROLE_SUBMISSION'),
  );
  const started = process.cpuUsage();
  let after;
  for (;;) {
    const { page } = await client.resultsPage({
      endpoint,
      campaignId: campaign.id,
      limit: 100,
      reportType: endpoint === 'role' ? (kind === 'overall' ? 'OVERALL' : 'DETAILED') : undefined,
      startingAfter: after,
    });
    if (!page.has_more) break;
    after = BigInt(page.last_record_index);
  }
  const used = process.cpuUsage(started);
  await client.close();
  return (used.user + used.system) / 1000;
}

const cpu = Object.fromEntries(builds.map((b) => [b.name, []]));
const rounds = Number(args.rounds ?? 11);
// One warm-up round, not counted.
for (let r = 0; r <= rounds; r++) {
  for (const b of r % 2 ? [...builds].reverse() : builds) {
    const ms = await read(b);
    if (r > 0) cpu[b.name].push(ms);
  }
}
server.child.kill('SIGTERM');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const first = builds[0].name;
for (const b of builds) {
  const paired =
    b.name === first
      ? ''
      : `, ${b.name}/${first} ${median(cpu[b.name].map((x, i) => x / cpu[first][i])).toFixed(3)} (median of ${rounds} paired rounds)`;
  console.log(`${kind} ${b.name} (${b.dir}): CPU ${median(cpu[b.name]).toFixed(1)} ms${paired}`);
}
