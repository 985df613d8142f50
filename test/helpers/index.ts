import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { ApiConfig } from '../../src/config/config.js';
import { toJson } from '../../src/core/json.js';
import { parseQuirks } from '../../src/simulator/quirks.js';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from '../../src/simulator/server.js';
import { shapeRecord } from '../../src/simulator/shapes.js';
import { atFileEnd } from './file-end.js';

const started: RunningSimulator[] = [];
const dirs: string[] = [];

/**
 * A simulator on a free loopback port, closed after the file's tests. `quirkNames` takes the
 * names `simulate --quirks` takes (`docs`, `bare-array,flat-session`, …), on top of `quirks`.
 */
export async function sim(options: SimulatorOptions & { quirkNames?: string } = {}): Promise<RunningSimulator> {
  const { quirkNames, ...rest } = options;
  const named = quirkNames === undefined ? undefined : parseQuirks(quirkNames);
  const s = await startSimulator({
    rateLimit: undefined,
    ...rest,
    quirks: { ...rest.quirks, ...named?.quirks },
    unknownTypeCampaigns: rest.unknownTypeCampaigns ?? named?.unknownTypeCampaigns,
  });
  started.push(s);
  return s;
}

/** A fresh temporary directory, removed after the file's tests. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'campaign-sync-test-'));
  dirs.push(dir);
  return dir;
}

atFileEnd(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** GET a path of the simulator with its key (or another). */
export async function get(s: RunningSimulator, path: string, key: string | null = s.apiKey) {
  const res = await request(`${s.url}${path}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

export const BIN = fileURLToPath(new URL('../../bin/campaign-sync.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Spawns the built CLI; our own settings are unset unless `env` gives them (the tester's shell must not leak in). */
function spawnCli(args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string }) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    CAMPAIGN_SYNC_BASE_URL: undefined,
    CAMPAIGN_SYNC_API_KEY: undefined,
    CAMPAIGN_SYNC_DB: undefined,
    CAMPAIGN_SYNC_RATE_LIMIT: undefined,
    // Each run's request budget is its own (a fresh state folder), unless a test shares a state folder on purpose.
    XDG_STATE_HOME: tempDir(),
    ...opts.env,
  };
  return spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs the built CLI to its end. */
export function cli(
  args: string[],
  opts: { env?: Record<string, string | undefined>; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, opts);
    let stdout = '';
    let stderr = '';
    // Decoded as a stream: a pipe may cut a multi-byte character between two reads, and decoding each
    // read alone turned "é" into two U+FFFD (seen on Node 22 with export's 1 MB writes).
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface RunningCli {
  child: ReturnType<typeof spawn>;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout+stderr match, rejects after `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the built CLI in the background (for signals, locks and watch). */
export function startCli(args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {}): RunningCli {
  const child = spawnCli(args, opts);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  exited.then(() => clearTimeout(timer));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor: (pattern, ms = 30_000) =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const poll = () => {
          if (pattern.test(out + err)) return resolve();
          if (child.exitCode !== null || Date.now() - started > ms)
            return reject(new Error(`timed out waiting for ${pattern}; output:\n${out}\n${err}`));
          setTimeout(poll, 20);
        };
        poll();
      }),
  };
}

/** What the simulator serves (in its quirks' shapes) for each of the first `records` records of every campaign, by id. */
export function servedObjects(s: RunningSimulator, records: number): Map<string, Record<string, unknown>> {
  const byId = new Map<string, Record<string, unknown>>();
  for (const c of s.data.campaigns) {
    if (c.type !== 'SESSION_COMPLETION' && c.type !== 'ROLE_SUBMISSION') continue;
    for (let i = 0; i < records; i++) {
      const r =
        c.type === 'SESSION_COMPLETION'
          ? shapeRecord(s.data.sessionResult(c, i), 'session', s.quirks)
          : shapeRecord(s.data.roleResult(c, i, 'DETAILED'), 'role', s.quirks);
      byId.set(r.id as string, r);
    }
  }
  return byId;
}

/** What the simulator serves for each of the first `records` records of every campaign, as JSON text by id. */
export function servedRecords(s: RunningSimulator, records: number): Map<string, string> {
  const byId = new Map<string, string>();
  for (const [id, r] of servedObjects(s, records)) byId.set(id, toJson(r));
  return byId;
}

/** A client config for a test server at `url` (a simulator's by default): no rate limit worth the name. */
export function clientConfig(target: { url: string; apiKey: string } | string, over: Partial<ApiConfig> = {}): ApiConfig {
  const { url, apiKey } = typeof target === 'string' ? { url: target, apiKey: 'k' } : target;
  return {
    baseUrl: new URL(url),
    apiKey,
    rate: { count: 100_000, windowMs: 1000 },
    timeoutMs: 10_000,
    maxRetries: 3,
    maxRetryWaitMs: 120_000,
    ...over,
  };
}

/** stderr without watch's first line (`watching <service> into <mirror> every …`), said at every start. */
export function afterWatchStart(stderr: string): string {
  return stderr.replace(/^watching \S+ into .+ every \S+, request budget \S+\n/, '');
}
