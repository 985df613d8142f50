/**
 * The compile cache's folder (src/core/compile-cache.ts): the user's own, 0700, or no cache at all;
 * never Node's default in the shared temporary folder.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compileCacheDir, enableCompileCache } from '../../../src/core/compile-cache.js';

const made: string[] = [];
function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'campaign-sync-cc-'));
  made.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs enableCompileCache with XDG_CACHE_HOME at `cache`; returns the folders handed to Node. */
function enabled(cache: string): string[] {
  const given: string[] = [];
  enableCompileCache((dir) => given.push(dir), { XDG_CACHE_HOME: cache });
  return given;
}

describe('the compile cache folder', () => {
  it('is under XDG_CACHE_HOME when it is absolute, else ~/.cache', () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: '/x/cache' }, '/home/u')).toBe('/x/cache/campaign-sync/compile-cache');
    expect(compileCacheDir({ XDG_CACHE_HOME: 'relative' }, '/home/u')).toBe('/home/u/.cache/campaign-sync/compile-cache');
    expect(compileCacheDir({}, '/home/u')).toBe('/home/u/.cache/campaign-sync/compile-cache');
    expect(compileCacheDir({}, '')).toBeUndefined();
  });

  it('is made 0700 and handed to Node', () => {
    const cache = home();
    const dir = join(cache, 'campaign-sync', 'compile-cache');
    expect(enabled(cache)).toEqual([dir]);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    // A second run finds it as the first left it.
    expect(enabled(cache)).toEqual([dir]);
  });

  it('is not used when it is a link, others may open it, or others may change its parent', () => {
    const cache = home();
    mkdirSync(join(cache, 'campaign-sync'), { mode: 0o700 });
    const elsewhere = join(home(), 'planted');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, join(cache, 'campaign-sync', 'compile-cache'));
    expect(enabled(cache)).toEqual([]);

    const open = home();
    mkdirSync(join(open, 'campaign-sync', 'compile-cache'), { recursive: true });
    chmodSync(join(open, 'campaign-sync', 'compile-cache'), 0o755);
    expect(enabled(open)).toEqual([]);

    const shared = home();
    mkdirSync(join(shared, 'campaign-sync'));
    chmodSync(join(shared, 'campaign-sync'), 0o777);
    expect(enabled(shared)).toEqual([]);
  });

  it('is not used when it cannot be made (a file in the way)', () => {
    const file = join(home(), 'file');
    writeFileSync(file, '');
    expect(enabled(join(file, 'cache'))).toEqual([]);
  });
});
