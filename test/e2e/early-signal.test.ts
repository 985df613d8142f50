/**
 * A SIGINT or SIGTERM that arrives while the CLI loads, before main() installs its handlers: the
 * launcher keeps it and main() acts on it as on any other signal (PRODUCT.md §3), where Node's
 * default action would kill the process: no exit code of ours, no message. The load of the main bundle
 * is held by a preloaded hook (helpers/hold-main.mjs) until the test has sent its signals.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { afterWatchStart, type RunningCli, sim, startCli, tempDir } from '../helpers/index.js';

const HOLD = fileURLToPath(new URL('../helpers/hold-main.mjs', import.meta.url));

/** Starts the CLI with its main bundle held; resolves once the launcher is waiting for it. */
async function held(args: string[], env: Record<string, string> = {}): Promise<{ run: RunningCli; release: () => void }> {
  const gate = join(tempDir(), 'gate');
  const run = startCli(args, { env: { ...env, NODE_OPTIONS: `--import ${HOLD}`, HOLD_MAIN_GATE: gate } });
  for (const t0 = Date.now(); !existsSync(`${gate}.loading`); ) {
    if (run.child.exitCode !== null || Date.now() - t0 > 20_000) throw new Error(`the CLI never loaded its main bundle:\n${run.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { run, release: () => writeFileSync(gate, '') };
}

/** Sends `signal` and lets the launcher's handler see it before main() loads. */
async function send(run: RunningCli, signal: NodeJS.Signals): Promise<void> {
  run.child.kill(signal);
  await new Promise((resolve) => setTimeout(resolve, 100));
}

describe('a signal while the CLI loads', () => {
  it('SIGTERM to watch: it stops as on any other signal and exits 0', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const dir = tempDir();
    const { run, release } = await held(['watch', '--db', join(dir, 'm.db'), '--interval', '10m'], {
      CAMPAIGN_SYNC_BASE_URL: s.url,
      CAMPAIGN_SYNC_API_KEY: s.apiKey,
    });
    await send(run, 'SIGTERM');
    expect(run.child.exitCode).toBeNull();
    release();
    const { code, signal } = await run.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    // Stopped before its first pass: nothing was asked of the service, and it says so.
    expect(afterWatchStart(run.stderr())).toBe('campaign-sync: interrupted; nothing more was done\n');
    expect(s.stats.requests).toBe(0);
  });

  it('SIGHUP to watch: kept like SIGTERM, exit 0 (not killed by the default action, 129)', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const { run, release } = await held(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '10m'], {
      CAMPAIGN_SYNC_BASE_URL: s.url,
      CAMPAIGN_SYNC_API_KEY: s.apiKey,
    });
    await send(run, 'SIGHUP');
    expect(run.child.exitCode).toBeNull();
    release();
    const { code, signal } = await run.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(afterWatchStart(run.stderr())).toBe('campaign-sync: interrupted; nothing more was done\n');
  });

  it('SIGINT to pull --json: exit 0 with one document saying so (never an empty stdout)', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const { run, release } = await held(['pull', '--json', '--db', join(tempDir(), 'm.db')], {
      CAMPAIGN_SYNC_BASE_URL: s.url,
      CAMPAIGN_SYNC_API_KEY: s.apiKey,
    });
    await send(run, 'SIGINT');
    release();
    const { code, signal } = await run.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(JSON.parse(run.stdout())).toEqual({ interrupted: true, exit_code: 0 });
    expect(run.stderr()).toBe('');
    expect(s.stats.requests).toBe(0);
  });

  it('SIGINT to export -o: exit 130 with its one line, and no file', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    openDatabase(db).close();
    const out = join(dir, 'out.csv');
    const { run, release } = await held(['export', '--db', db, '--table', 'eval_results', '-o', out]);
    await send(run, 'SIGINT');
    release();
    const { code, signal } = await run.exited;
    expect({ code, signal }).toEqual({ code: 130, signal: null });
    expect(run.stderr()).toBe(`campaign-sync: export interrupted: ${out} was not written\n`);
    expect(readdirSync(dir).filter((f) => f.startsWith('out'))).toEqual([]);
  });

  it('a second signal while loading exits 130 at once, as after loading', async () => {
    const { run } = await held(['pull', '--db', join(tempDir(), 'm.db'), '--base-url', 'http://127.0.0.1:9']);
    await send(run, 'SIGINT');
    run.child.kill('SIGINT');
    // Never released: the launcher itself exits.
    const { code, signal } = await run.exited;
    expect({ code, signal }).toEqual({ code: 130, signal: null });
    expect(run.stderr()).toBe('campaign-sync: second SIGINT, exiting now\n');
  });
});
