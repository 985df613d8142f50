/**
 * V8's compiled code of the bundle kept between runs (Node 22.1+: module.enableCompileCache), in a
 * folder that is the user's alone: $XDG_CACHE_HOME/campaign-sync/compile-cache, else
 * ~/.cache/campaign-sync/compile-cache. Node's own default is a folder of the shared temporary
 * directory, where another user could put entries there first, and a cache entry is code V8 runs:
 * never that. When the folder cannot be made, or is a link, or is not owned by this user, or its
 * parent may be changed by others, or anyone else may open it, nothing is cached: the cache only
 * saves start time.
 *
 * bin/campaign-sync.js loads this file (its own entry of the bundle, importing only Node's modules)
 * only where Node has the cache, before the rest of the bundle is compiled.
 */
import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The folder to cache compiled code in, from the environment; undefined where there is no home to put it in. */
export function compileCacheDir(env: NodeJS.ProcessEnv, home: string = homedir()): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  // A relative XDG folder is invalid and ignored, as the XDG spec says.
  const base = xdg !== undefined && xdg !== '' && isAbsolute(xdg) ? xdg : home === '' ? undefined : join(home, '.cache');
  return base === undefined ? undefined : join(base, 'campaign-sync', 'compile-cache');
}

/** Whether `stats` (from lstat: a link is not followed) is a folder of `uid` that no one else may change, or, with `alone`, open. */
function ownFolder(stats: Stats, uid: number, alone: boolean): boolean {
  return stats.isDirectory() && stats.uid === uid && (stats.mode & (alone ? 0o077 : 0o022)) === 0;
}

/**
 * Makes the cache folder (0700) and hands it to `enable` when it is the user's alone; returns the
 * folder, or undefined when nothing is cached.
 */
export function enableCompileCache(enable: (dir: string) => unknown, env: NodeJS.ProcessEnv = process.env): string | undefined {
  // Without owners (Windows), whose folder it is cannot be told: no cache.
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  try {
    const dir = compileCacheDir(env);
    if (dir === undefined) return undefined;
    const parent = join(dir, '..');
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!ownFolder(lstatSync(parent), uid, false) || !ownFolder(lstatSync(dir), uid, true)) return undefined;
    enable(dir);
    return dir;
  } catch {
    // A read-only home, a full disk, a file in the way: the CLI runs as well without the cache.
    return undefined;
  }
}
