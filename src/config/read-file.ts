/**
 * Reads a small file the user names (a key file, a TLS certificate or key) without ever blocking: a
 * named pipe with no writer would hold a plain open, and every signal with it, for ever, and a device
 * (/dev/zero) would be read until memory ran out. Opened non-blocking, then checked through the
 * descriptor it reads from.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';

export type ReadFailure =
  /** open(2) or read(2) failed: `code` is its errno name. */
  { kind: 'error'; code: string } | { kind: 'not-regular' } | { kind: 'too-big'; size: number };

/** The file's bytes and mode, or why not. */
export function readRegularFile(path: string, maxBytes: number): { bytes: Buffer; mode: number } | ReadFailure {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    return { kind: 'error', code: (err as NodeJS.ErrnoException).code ?? 'error' };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { kind: 'not-regular' };
    if (stat.size > maxBytes) return { kind: 'too-big', size: stat.size };
    return { bytes: readFileSync(fd), mode: stat.mode };
  } catch (err) {
    return { kind: 'error', code: (err as NodeJS.ErrnoException).code ?? 'error' };
  } finally {
    closeSync(fd);
  }
}
