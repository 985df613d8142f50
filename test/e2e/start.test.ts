/**
 * What a no-op pull's process loads: the launcher runs the bundle (scripts/bundle.js), so
 * our code comes from about 40 files of dist/bundle/ rather than 66 of tsc's, and neither zod nor anything
 * else a well-formed no-op pull does not use is loaded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SQLITE_DRIVER } from '../../src/store/sqlite/driver.js';
import { cli, sim, tempDir } from '../helpers/index.js';

const HOOK = fileURLToPath(new URL('../helpers/loaded-modules.mjs', import.meta.url));
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** A simulator, a folder, the mirror's path in it and the environment that reaches the simulator. */
async function setUp(campaigns: number) {
  const s = await sim({ campaigns, records: 20 });
  const dir = tempDir();
  return { dir, db: join(dir, 'm.db'), env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } };
}

/** The packages of node_modules that a list of loaded modules (../helpers/loaded-modules.mjs) holds. */
function packagesOf(loaded: string[]): Set<string> {
  return new Set(loaded.flatMap((m) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m)?.[1] ?? []));
}

describe("a no-op pull's start", () => {
  it('loads our code from the bundle, at most 50 files, no zod, pg, ora or prom-client, and no CommonJS as an ES module', async () => {
    const { dir, db, env } = await setUp(4);
    const args = ['pull', '--db', db, '--quiet'];
    expect((await cli(args, { env })).code).toBe(0);
    const log = join(dir, 'loaded.txt');
    const r = await cli(args, { env: { ...env, NODE_OPTIONS: `--import ${HOOK}`, LOADED_MODULES_FILE: log } });
    expect(r.code, r.stderr).toBe(0);
    const loaded = readFileSync(log, 'utf8').trim().split('\n');
    const ours = loaded.filter((m) => m.includes(DIST));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.filter((m) => !m.includes(join(DIST, 'bundle/')))).toEqual([]);
    // esbuild's code splitting makes a chunk of each group of modules shared by the same lazy entries:
    // the count grows with the features on a pull's path (quarantine, drift) and with files of one job
    // that several commands share (core/fs/, core/pg-url.ts, the service a mirror records, the
    // discard of a failed first run); the start's cost itself is held by `npm run bench` (a no-op
    // pull ≤ 4× `node -e 0`).
    expect(new Set(ours).size).toBeLessThanOrEqual(50);
    const packages = packagesOf(loaded);
    for (const unused of ['zod', 'pg', 'ora', 'prom-client', 'hyparquet-writer', 'smol-toml', 'cli-table3', 'lossless-json']) {
      expect(packages, unused).not.toContain(unused);
    }
    expect(packages).toContain(SQLITE_DRIVER);
    // better-sqlite3 is required, not imported (store/sqlite/driver.ts): Node's CommonJS export lexer never starts.
    expect(loaded.filter((m) => m.startsWith('builtin ')).length).toBeGreaterThan(20);
    expect(loaded).not.toContain('builtin internal/deps/cjs-module-lexer/lexer');
  });

  it('status loads neither undici nor node:v8, node:crypto or node:child_process: it sends no request, digests nothing and starts no process', async () => {
    const { dir, db, env } = await setUp(2);
    expect((await cli(['pull', '--db', db, '--quiet'], { env })).code).toBe(0);
    const log = join(dir, 'loaded.txt');
    const r = await cli(['status', '--db', db], { env: { NODE_OPTIONS: `--import ${HOOK}`, LOADED_MODULES_FILE: log } });
    expect(r.code, r.stderr).toBe(0);
    const loaded = readFileSync(log, 'utf8').trim().split('\n');
    expect(loaded.filter((m) => m.includes('node_modules/undici/'))).toEqual([]);
    // V8's flags are set where undici loads (api/engine.ts); the hashes and digests take crypto when they run.
    expect(loaded).not.toContain('builtin v8');
    expect(loaded).not.toContain('builtin crypto');
    // commander's executable subcommands, which the CLI has none of, are the only use of child_process on its path.
    expect(loaded).not.toContain('builtin child_process');
    // The driver is handed its addon's path (store/sqlite/driver.ts): the `bindings` package's search never runs.
    const packages = packagesOf(loaded);
    expect(packages).toContain(SQLITE_DRIVER);
    expect(packages).not.toContain('bindings');
  });

  it('runs a command in no async context: no AsyncLocalStorage is entered, so Node never turns its promise hooks on', async () => {
    const { dir, db, env } = await setUp(2);
    // Preloaded: records each entry into an async context (AsyncLocalStorage's run and enterWith).
    const hook = join(dir, 'async-context.mjs');
    writeFileSync(
      hook,
      [
        "import { AsyncLocalStorage } from 'node:async_hooks';",
        "import { appendFileSync } from 'node:fs';",
        "for (const name of ['run', 'enterWith']) {",
        '  const original = AsyncLocalStorage.prototype[name];',
        '  AsyncLocalStorage.prototype[name] = function (...args) {',
        "    appendFileSync(process.env.ASYNC_CONTEXT_FILE, name + '\\n');",
        '    return original.apply(this, args);',
        '  };',
        '}',
      ].join('\n'),
    );
    const log = join(dir, 'entered.txt');
    const traced = { NODE_OPTIONS: `--import ${hook}`, ASYNC_CONTEXT_FILE: log };
    for (const args of [
      ['pull', '--db', db, '--quiet'],
      ['status', '--db', db],
    ]) {
      const r = await cli(args, { env: { ...env, ...traced } });
      expect(r.code, r.stderr).toBe(0);
    }
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    // The hook does see an entry where there is one.
    execFileSync(process.execPath, ['-e', "new (require('node:async_hooks').AsyncLocalStorage)().run(1, () => {})"], {
      env: { ...process.env, ...traced },
    });
    expect(readFileSync(log, 'utf8')).toBe('run\n');
  });
});
