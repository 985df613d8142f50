// Issue 15: `export --format csv` of the largest table against `sqlite3 -csv` of the same query, both
// as whole processes writing a file. See docs/performance.md.
//
//   npm run build && node bench/export.js [--records N] [--rounds N] [--table eval-results] [--db FILE]
//
// Builds a mirror of N role DETAILED records from the simulator (in its own process; eval_results,
// about six rows per record, is the largest table), or reuses --db when that file exists. Then, in
// interleaved paired rounds (the order alternating, so a warm cache or a busy neighbour favours
// neither), times the built CLI's `export --format csv -o` and `sqlite3 -csv -header <db> "<SELECT>"`
// redirected to a file. The result is the median of the rounds' ratios (this VM's speed drifts).
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RequestBudget } from '../dist/api/budget.js';
import { ApiClient } from '../dist/api/client.js';
import { SqliteCheckpoints } from '../dist/store/sqlite/checkpoints.js';
import { openDatabase } from '../dist/store/sqlite/db.js';
import { exportQuery } from '../dist/store/sqlite/export-sql.js';
import { SqliteSink } from '../dist/store/sqlite/sink.js';
import { runPass } from '../dist/sync/pass.js';

const BIN = fileURLToPath(new URL('../bin/campaign-sync.js', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const SQLITE3 = '/usr/bin/sqlite3';

function startServer(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', (d) => resolve({ ...JSON.parse(String(d)), child }));
    child.on('error', reject);
  });
}

/** A mirror of `records` role DETAILED records (one role campaign of the simulator's two). */
async function buildMirror(dbPath, records) {
  const server = await startServer({ seed: 15, campaigns: 2, records });
  const db = openDatabase(dbPath);
  const state = new SqliteCheckpoints(db);
  const rate = { count: 1_000_000, windowMs: 1000 };
  const client = new ApiClient(
    { baseUrl: new URL(server.url), apiKey: server.apiKey, rate, timeoutMs: 60_000, maxRetries: 3, maxRetryWaitMs: 120_000 },
    { budget: new RequestBudget(rate) },
  );
  try {
    await runPass(
      { client, sink: new SqliteSink(db, state), state },
      { campaigns: [], type: 'role', reportType: 'DETAILED', pageSize: 100, concurrency: 2, full: false },
    );
  } finally {
    await client.close();
    db.close();
    server.child.kill();
  }
}

/** Runs a process to its end with stdout into `outFile`; resolves with its wall time in ms. */
function timed(cmd, args, outFile) {
  const fd = openSync(outFile, 'w', 0o600);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    // stderr is kept for a failure only: the CLI's "wrote N rows" line is part of what is timed.
    const child = spawn(cmd, args, { stdio: ['ignore', fd, 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - t0;
      closeSync(fd);
      code === 0 ? resolve(ms) : reject(new Error(`${cmd} exited with code ${code}: ${stderr}`));
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/**
 * Times the CLI's CSV export of `table` against sqlite3's on the same SELECT. Returns the median
 * ratio of `rounds` paired rounds, with the medians of each side, the rows and the bytes written.
 */
export async function exportVsSqlite(opts = {}) {
  const { records = 20_000, rounds = 7, table = 'eval-results', format = 'csv' } = opts;
  const work = mkdtempSync(join(tmpdir(), 'campaign-sync-bench-export-'));
  try {
    const dbPath = opts.db ?? join(work, 'mirror.db');
    if (!existsSync(dbPath)) await buildMirror(dbPath, records);
    const { sql } = exportQuery(table, {});
    const db = openDatabase(dbPath, { readonly: true, mustExist: true });
    const tableName = sql.split(' FROM ')[1].split(' ')[0];
    const rows = db.prepare(`SELECT count(*) FROM ${tableName}`).pluck().get();
    db.close();
    const cliOut = join(work, 'cli.csv');
    const sqliteOut = join(work, 'sqlite.csv');
    // Each side starts with no file of the last round in its way: `timed` truncates sqlite3's output
    // (freeing its blocks) before its clock starts, so the CLI's is removed before its clock starts
    // too, rather than freed by the rename that replaces it (30-40 ms for 48 MB, measured).
    const runCli = () => {
      rmSync(cliOut, { force: true });
      return cliTimed();
    };
    const cliTimed = () =>
      timed(
        process.execPath,
        // CSV is the default format: the command as a user types it (an explicit --format loads zod, ~70 ms).
        [BIN, 'export', '--db', dbPath, '--table', table, ...(format === 'csv' ? [] : ['--format', format]), '-o', cliOut],
        join(work, 'cli.stdout'),
      );
    const runSqlite = () => timed(SQLITE3, ['-csv', '-header', dbPath, sql], sqliteOut);
    // One warm-up of each: the first read of the database pays the page cache.
    await runCli();
    await runSqlite();
    const pairs = [];
    for (let i = 0; i < rounds; i++) {
      const t = {};
      for (const side of i % 2 === 0 ? ['cli', 'sqlite'] : ['sqlite', 'cli']) t[side] = side === 'cli' ? await runCli() : await runSqlite();
      pairs.push(t);
    }
    return {
      table,
      format,
      rows,
      cliMs: Math.round(median(pairs.map((p) => p.cli))),
      sqliteMs: Math.round(median(pairs.map((p) => p.sqlite))),
      ratio: Math.round(median(pairs.map((p) => p.cli / p.sqlite)) * 100) / 100,
      cliMb: Math.round(statSync(cliOut).size / 1e5) / 10,
      sqliteMb: Math.round(statSync(sqliteOut).size / 1e5) / 10,
      pairs: pairs.map((p) => ({ cliMs: Math.round(p.cli), sqliteMs: Math.round(p.sqlite) })),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const flag = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const result = await exportVsSqlite({
    records: flag('--records') === undefined ? undefined : Number(flag('--records')),
    rounds: flag('--rounds') === undefined ? undefined : Number(flag('--rounds')),
    table: flag('--table'),
    format: flag('--format'),
    db: flag('--db'),
  });
  console.log(JSON.stringify({ ...result, pairs: undefined }));
  console.log(JSON.stringify(result.pairs));
  console.log(
    `export ${result.format} of ${result.table} vs sqlite3 -csv: ${result.ratio}x ${result.ratio <= 2 ? '✓' : '✗'} (target <= 2x)`,
  );
}
