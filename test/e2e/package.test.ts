/**
 * The package as users install it: `npm pack` holds only what runs, the README, LICENSE and
 * CHANGELOG; `npm install` of that tarball into an empty folder (its dependencies from the npm
 * registry, the SQLite driver built or unpacked for this Node) gives a program whose demo works, run
 * as its installed path and through npx, and whose printed hints run where they are printed.
 *
 * The install takes minutes (a native build) and needs the registry, so this runs under CI=true
 * (on each Node CI tests) or with CAMPAIGN_SYNC_TEST_PACKAGE=1; elsewhere it skips with one line.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN = process.env.CI === 'true' || process.env.CAMPAIGN_SYNC_TEST_PACKAGE === '1';
if (!RUN)
  console.warn(
    'SKIPPED the package test (npm pack, npm install of the tarball, demo): set CAMPAIGN_SYNC_TEST_PACKAGE=1 to run it (minutes; needs the npm registry)',
  );

/**
 * npm, quietly, in `cwd`: the environment as given (CI passes npm_config_nodedir for another Node),
 * with the machine's own NODE_EXTRA_CA_CERTS, which the test run keeps from the CLIs it spawns (npm
 * on Node 24 waits for ever on a registry behind a CA only that names).
 */
function npm(args: string[], cwd: string): string {
  const env = { ...process.env, NODE_EXTRA_CA_CERTS: process.env.CAMPAIGN_SYNC_TEST_EXTRA_CA_CERTS };
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env, encoding: 'utf8', timeout: 540_000 });
}

describe.skipIf(!RUN)('the installed package', () => {
  it('packs only what runs plus README, LICENSE and CHANGELOG; installs into an empty folder; its demo and hints work', {
    timeout: 600_000,
  }, () => {
    const out = tempDir();
    // dist/ is built by the test run's global setup: no need for prepare's build again.
    const [packed] = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', out], ROOT)) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    const files = (packed?.files ?? []).map((f) => f.path).sort();
    for (const f of files)
      expect(f, 'a file the tarball should not hold').toMatch(
        /^(bin\/campaign-sync\.js|dist\/bundle\/[\w-]+\.js|README\.md|LICENSE|CHANGELOG\.md|package\.json)$/,
      );
    for (const needed of ['bin/campaign-sync.js', 'dist/bundle/main.js', 'README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) {
      expect(files).toContain(needed);
    }

    const home = tempDir();
    npm(['install', join(out, (packed as { filename: string }).filename)], home);
    const env = { ...process.env, CAMPAIGN_SYNC_DB: undefined, XDG_STATE_HOME: tempDir(), npm_command: undefined };
    const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: home, env, encoding: 'utf8', timeout: 120_000 });

    const demo = run('./node_modules/.bin/campaign-sync', ['demo', '--db', 'demo.db', '--campaigns', '2', '--records', '5']);
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stdout).toContain('  ./node_modules/.bin/campaign-sync status --db demo.db');
    // The hint as printed, in the folder where it was printed.
    const hint = demo.stdout.split('\n').find((l) => l.includes(' status --db ')) as string;
    const status = run('sh', ['-c', `${hint.trim()} --json`]);
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).streams.length).toBe(2);

    // npx finds the installed package in this folder (--no: never from the registry).
    const viaNpx = spawnSync('npx', ['--no', 'campaign-sync', 'demo', '--db', 'npx.db', '--campaigns', '2', '--records', '5'], {
      cwd: home,
      env: { ...env, NODE_EXTRA_CA_CERTS: process.env.CAMPAIGN_SYNC_TEST_EXTRA_CA_CERTS },
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(viaNpx.status, viaNpx.stderr).toBe(0);
    expect(readdirSync(home)).toEqual(expect.arrayContaining(['demo.db', 'npx.db']));
  });
});
