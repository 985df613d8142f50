/**
 * Where a database's checkpoints send records, as stored in `meta` under `destination`. The text
 * is the one every release wrote ('sqlite' or 'ndjson:<absolute folder>'), so older databases read
 * the same.
 */
import type { Destination } from '../../core/types.js';
import { UsageError } from '../../errors.js';

const NDJSON_PREFIX = 'ndjson:';

export function encodeDestination(d: Destination): string {
  return d.kind === 'sqlite' ? 'sqlite' : `${NDJSON_PREFIX}${d.out}`;
}

/** Reads the stored text; a value no release wrote is not ours to guess at (a usage error, like a foreign file). */
export function decodeDestination(stored: string): Destination {
  if (stored === 'sqlite') return { kind: 'sqlite' };
  if (stored.startsWith(NDJSON_PREFIX)) return { kind: 'ndjson', out: stored.slice(NDJSON_PREFIX.length) };
  throw new UsageError(`this database's checkpoints are for destination "${stored}", which campaign-sync does not write`);
}

/** The flags that choose `d`, as a person would type them. */
export function describeDestination(d: Destination): string {
  return d.kind === 'sqlite' ? '--format sqlite' : `--format ndjson --out ${d.out}`;
}
