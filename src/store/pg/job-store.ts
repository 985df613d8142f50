/** A pull's or watch's PostgreSQL team mirror: stream leases in the server, the budget's slots shared by every host. */
import { UsageError } from '../../errors.js';
import { retentionDue } from '../model/retention.js';
import type { BackendCapabilities, JobStore, StoreChoice } from '../port.js';
import { PgBudgetSlots } from './budget-slots.js';
import { campaignNames } from './campaigns.js';
import { PgCounters } from './counters.js';
import { knownDrift } from './drift.js';
import { DEFAULT_LEASE_MS, openPgMirror } from './open.js';
import { applyPgRetention } from './retention.js';
import { finishRewrite } from './rewrite.js';
import { serverNow } from './server-clock.js';
import { claimPgService, restorePgService } from './service.js';

/** The password of a postgres:// URL, which an alert must never carry. */
function urlPassword(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}

/** Opens the mirror for a pull or watch; `capabilities` are the backend's (store/pg/backend.ts). */
export async function openPgJobStore(c: StoreChoice, capabilities: BackendCapabilities): Promise<JobStore> {
  const { path, where, pgSchema } = c.target;
  if (c.format === 'ndjson')
    throw new UsageError(
      `${c.formatWhere ?? '--format ndjson'} writes files; with a postgres:// URL in ${where} the records go to PostgreSQL`,
    );
  const m = await openPgMirror(path, pgSchema, c.concurrency, where, c.leaseMs);
  let retention: Awaited<ReturnType<typeof applyPgRetention>> = { ranAt: undefined };
  // The URL a --switch-service replaced: put back if the run fails.
  let replaced: string | undefined;
  try {
    // Before anything else is written: a mirror of another service is refused as it was found.
    if (c.service !== undefined) replaced = await claimPgService(m.db, c.service);
    if (c.retention !== undefined) retention = await applyPgRetention(m.db, c.retention, c.warning, c.leaseMs);
    // An erasure whose tables were not rewritten yet (a crash, a full disk) is finished first.
    await finishRewrite(m.db, c.leaseMs ?? DEFAULT_LEASE_MS, c.warning);
  } catch (err) {
    await m.release();
    throw err;
  }
  const { ranAt } = retention;
  return {
    capabilities,
    retained: retention.retained,
    retentionDue: (now) => c.retention !== undefined && retentionDue(ranAt, now),
    place: { kind: 'pg', name: m.db.name },
    secret: urlPassword(path),
    sink: m.sink,
    cursors: m.state,
    streams: () => m.state.all(),
    campaignNames: () => campaignNames(m.db),
    counters: new PgCounters(m.db, () => m.sink.flush()),
    budgetSlots: (key, timeoutMs) => new PgBudgetSlots(m.db, key, timeoutMs),
    driftKnown: (stream) => knownDrift(m.db, stream),
    fleetTimes: () => m.leases.times(),
    notified: () => m.state.notified(),
    setNotified: (stream, value) => m.state.setNotified(stream, value),
    // Nothing local to move: the server keeps the mirror.
    async verify() {},
    // The fleet's one clock: every worker stamps and judges by it (store/pg/server-clock.ts).
    now: () => serverNow(m.db),
    async close(opts = {}) {
      try {
        await m.sink.close();
        // A switch is kept by a run that succeeds at the new URL, not by a typo's failure.
        if (opts.failed === true && replaced !== undefined && c.service !== undefined)
          await restorePgService(m.db, c.service.url, replaced);
      } finally {
        await m.release();
      }
    },
  };
}
