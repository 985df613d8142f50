/** Streams held by `reset` and `forget` for their whole run, so no worker syncs one meanwhile. */
import { LockedError } from '../../errors.js';
import type { PgLeases } from './leases.js';

/** Takes the lease of every stream, or throws LockedError (exit 75) naming one a worker holds. */
export async function holdAll(leases: PgLeases, streams: readonly string[], name: string): Promise<void> {
  for (const stream of streams) {
    // 'infinity': no completed sync makes the stream need no holding.
    if (leases.holds(stream) || (await leases.claim(stream, 'infinity')) === 'taken') continue;
    throw new LockedError(`another campaign-sync is syncing stream ${stream} of ${name}; run again once it is done`);
  }
}
