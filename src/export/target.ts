/**
 * Where an export writes (-o), checked before any work: a file name, never a folder, a pipe or a
 * device, never one of the mirror's own files, never a symbolic link.
 */
import { type Stats, statSync } from 'node:fs';
import { canonicalPath, refuseLinks } from '../core/fs/private-file.js';
import { UsageError } from '../errors.js';

/**
 * The file -o names, or undefined for stdout: no -o, or `-o -` as most tools take it (a file named
 * `-` is `-o ./-`). An empty name is a bad flag value, not a file that cannot be created (74).
 */
export function outputFile(given: string | undefined): string | undefined {
  if (given === '') throw new UsageError('-o: the file name is empty; give a file, or - for stdout');
  return given === '-' ? undefined : given;
}

/** What an existing -o is, when it is not a regular file a whole export can replace. */
function notAFile(stat: Stats): string | undefined {
  if (stat.isFile()) return undefined;
  if (stat.isDirectory()) return 'is a folder; give a file name';
  const kind = stat.isFIFO()
    ? 'a named pipe'
    : stat.isSocket()
      ? 'a socket'
      : stat.isCharacterDevice() || stat.isBlockDevice()
        ? 'a device'
        : 'not a regular file';
  return `is ${kind}: export puts a whole file in its place; to write into a pipe or a device, leave out -o and redirect stdout`;
}

/**
 * -o is checked before any work: a folder, a pipe or a device (or a link to one) is a bad flag
 * value, since the export would replace it with a file; so is the database being exported (`db`, as
 * messages name it), or one of its files (`own`: -wal, -shm, the lock), which the export would
 * overwrite with exit 0; and so is any other symbolic link.
 */
export function checkOutput(path: string, own: readonly string[], db: string): void {
  let stat: Stats | undefined;
  try {
    stat = statSync(path);
  } catch {
    // absent (the usual case) or unreachable: creating the file reports it
  }
  const problem = stat === undefined ? undefined : notAFile(stat);
  if (problem !== undefined) throw new UsageError(`-o ${path}: ${problem}`);
  const target = own.length === 0 ? '' : canonicalPath(path);
  const same = own.some((file) => {
    if (target === file) return true;
    if (stat === undefined) return false;
    try {
      const other = statSync(file);
      return other.ino === stat.ino && other.dev === stat.dev;
    } catch {
      return false;
    }
  });
  if (same) throw new UsageError(`-o ${path}: is the database being exported (${db}) or one of its files; give another file name`);
  // The rename would replace the link, not write through it; but a link planted where an export goes
  // is refused as at every file campaign-sync writes.
  refuseLinks([path], 'give the file its own path, or remove the link');
}
