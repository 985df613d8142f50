// Paired timing of a DETAILED pull with --compression gzip vs off, against the bench server (its
// pages, compressed ones too, cached, in its own process). Alternating runs; prints the medians of
// wall and CPU (user+sys of the CLI) and the bytes on the wire. Run after `npm run build`:
//   node bench/compression.js [records=20000] [rounds=5]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const records = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 5);
const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'campaign-sync-compression-'));

// Role campaigns only (odd ids are role in the simulator's alternation): 2 campaigns, DETAILED.
const server = spawn(process.execPath, [SERVER, JSON.stringify({ seed: 3, campaigns: 2, records: Math.ceil(records / 2) })], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const { url, apiKey } = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(JSON.parse(String(d)))));

function timed(mode, n) {
  const db = join(work, `${mode}-${n}.db`);
  const r = spawnSyncTime(db, mode);
  rmSync(db, { force: true });
  return r;
}

function spawnSyncTime(db, mode) {
  const cmd = `TIMEFORMAT='%R %U %S'; { time "${process.execPath}" "${BIN}" pull --db "${db}" --rate-limit 1000000/1s --report-type DETAILED --compression ${mode} --quiet ; } 2>&1`;
  const text = execFileSync('bash', ['-c', cmd], {
    env: { ...process.env, CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: apiKey },
    encoding: 'utf8',
  });
  const [wall, user, sys] = text.trim().split('\n').at(-1).split(' ').map(Number);
  return { wall, cpu: user + sys };
}

/** Bytes of one DETAILED page of 100 records, as sent plain and gzip. */
async function pageBytes() {
  const auth = { authorization: `Bearer ${apiKey}` };
  const campaigns = await (await fetch(`${url}/v1/campaigns`, { headers: auth })).json();
  const role = (campaigns.data ?? campaigns).find((c) => c.type === 'ROLE_SUBMISSION');
  const path = `${url}/v1/campaigns/role/results?campaign_id=${role.id}&limit=100&sort=asc&report_type=DETAILED`;
  const size = async (encoding) => {
    const { request } = await import('undici');
    const res = await request(path, { headers: { ...auth, 'accept-encoding': encoding } });
    await res.body.arrayBuffer();
    return Number(res.headers['content-length']);
  };
  return { plain: await size('identity'), gzip: await size('gzip') };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const runs = { gzip: [], off: [] };
try {
  // A warm-up of each, not counted.
  timed('gzip', 'w');
  timed('off', 'w');
  for (let i = 0; i < rounds; i++) {
    for (const mode of i % 2 === 0 ? ['gzip', 'off'] : ['off', 'gzip']) runs[mode].push(timed(mode, i));
  }
  const row = (mode) => ({ mode, wallS: median(runs[mode].map((r) => r.wall)), cpuS: median(runs[mode].map((r) => r.cpu)) });
  const gz = row('gzip');
  const off = row('off');
  const bytes = await pageBytes();
  console.log(
    JSON.stringify({
      records,
      rounds,
      gzip: gz,
      off,
      wallRatio: gz.wallS / off.wallS,
      cpuRatio: gz.cpuS / off.cpuS,
      pageBytes: bytes,
      shrink: bytes.plain / bytes.gzip,
    }),
  );
} finally {
  server.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
