/**
 * Folders are made one at a time (core/fs/folders.ts): Node's recursive mkdirSync loops for ever, at
 * full CPU and deaf to SIGTERM, where a parent cannot be created (under /proc), as with
 * `--out /proc/nonexist/out` or `XDG_STATE_HOME=/proc`. A relative XDG_STATE_HOME or
 * XDG_CONFIG_HOME is ignored, as the XDG spec says.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stateDir, xdgHome } from '../../../../src/config/env.js';
import { makeFolders } from '../../../../src/core/fs/folders.js';
import { tempDir } from '../../../helpers/index.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

describe('makeFolders', () => {
  it('makes the missing folders with the mode, accepts existing ones, and names a file in the way', () => {
    const dir = tempDir();
    const deep = join(dir, 'a', 'b', 'c');
    makeFolders(deep, 0o700);
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o700);
    makeFolders(deep, 0o700);
    writeFileSync(join(dir, 'file'), '');
    expect(() => makeFolders(join(dir, 'file'), 0o700)).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    expect(() => makeFolders(join(dir, 'file', 'x'), 0o700)).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });

  it.runIf(process.platform === 'linux')('fails at once under /proc, where the recursive mkdirSync never returns', () => {
    const started = Date.now();
    expect(() => makeFolders('/proc/campaign-sync-nonexist/out', 0o700)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('XDG base folders from the environment', () => {
  it('a relative one is ignored', () => {
    expect(xdgHome('xdgStateHome', { XDG_STATE_HOME: 'rel/state' })).toBeUndefined();
    expect(xdgHome('xdgStateHome', { XDG_STATE_HOME: '/var/state' })).toBe('/var/state');
    expect(stateDir({ XDG_STATE_HOME: 'rel', HOME: '/home/u' })).not.toContain('rel');
    expect(xdgHome('xdgConfigHome', { XDG_CONFIG_HOME: './conf' })).toBeUndefined();
  });
});

describe.runIf(process.platform === 'linux')('the CLI with a folder it cannot make under /proc', () => {
  it('pull --out /proc/…: exit 74 naming the folder, in moments; XDG_STATE_HOME=/proc: the pull still runs', async () => {
    const s = await sharedSim({ campaigns: 2, records: 5 });
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const out = await runCli(['pull', '--db', join(dir, 'a.db'), '--format', 'ndjson', '--out', '/proc/campaign-sync-nonexist/out'], {
      env,
      timeoutMs: 20_000,
    });
    expect(out.signal).toBeNull();
    expect(out.code).toBe(74);
    expect(out.stderr).toContain('--out: cannot create /proc/campaign-sync-nonexist/out: no such file or folder (ENOENT)');
    const state = await runCli(['pull', '--db', join(dir, 'b.db')], { env: { ...env, XDG_STATE_HOME: '/proc' }, timeoutMs: 20_000 });
    expect(state.signal).toBeNull();
    expect(state.code, state.stderr).toBe(0);
    expect(existsSync('/proc/campaign-sync')).toBe(false);
  });
});
