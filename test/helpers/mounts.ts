/**
 * Real storage for storage-failure tests: tests run as root, which ignores permission bits, so a full
 * disk is a tiny tmpfs and read-only storage is a read-only bind mount. Without the right to mount, a
 * test is skipped locally (the helper returns undefined) and fails under CI.
 */
import { execFileSync } from 'node:child_process';

/** Runs `mount`; without the right to mount, the test is skipped locally and fails under CI. */
export function tryMount(args: string[]): boolean {
  try {
    execFileSync('mount', args, { stdio: 'pipe' });
    return true;
  } catch (err) {
    if (process.env.CI) throw new Error(`mount ${args.join(' ')} failed (CI must be able to mount): ${(err as Error).message}`);
    return false;
  }
}

/** Makes `dir` a read-only bind mount of itself; returns the undo, or undefined when mounting is not allowed. */
export function mountReadOnly(dir: string): (() => void) | undefined {
  if (!tryMount(['--bind', dir, dir])) return undefined;
  try {
    execFileSync('mount', ['-o', 'remount,ro,bind', dir], { stdio: 'pipe' });
  } catch (err) {
    execFileSync('umount', [dir]);
    throw err;
  }
  return () => execFileSync('umount', [dir]);
}

/** Mounts a tmpfs of `kb` KiB on `dir`; returns the undo, or undefined when mounting is not allowed. */
export function mountTmpfs(dir: string, kb: number): (() => void) | undefined {
  if (!tryMount(['-t', 'tmpfs', '-o', `size=${kb}k,mode=0755`, 'tmpfs', dir])) return undefined;
  return () => execFileSync('umount', [dir]);
}

/** Grows (or shrinks) the tmpfs mounted on `dir` to `kb` KiB: "freeing space" on a full disk. */
export function resizeTmpfs(dir: string, kb: number): void {
  execFileSync('mount', ['-o', `remount,size=${kb}k`, dir], { stdio: 'pipe' });
}
