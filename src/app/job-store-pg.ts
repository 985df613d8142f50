/** app/job-store.ts's PostgreSQL team mirror, loaded only for a postgres:// --db. */
import { UsageError } from '../errors.js';
import { PgBudgetSlots } from '../store/pg/budget-slots.js';
import { campaignNames } from '../store/pg/campaigns.js';
import { openPgMirror } from '../store/pg/open.js';
import type { JobStore, StoreChoice } from './job-store.js';

export async function openPgStore(c: StoreChoice): Promise<JobStore> {
  if (c.format === 'ndjson')
    throw new UsageError(
      `${c.formatWhere ?? '--format ndjson'} writes files; with a postgres:// URL in ${c.dbWhere ?? '--db'} the records go to PostgreSQL`,
    );
  const m = await openPgMirror(c.db, c.pgSchema, c.concurrency, c.warning, c.dbWhere);
  return {
    place: { kind: 'pg', name: m.db.name },
    sink: m.sink,
    cursors: m.state,
    streams: () => m.state.all(),
    campaignNames: () => campaignNames(m.db),
    budgetSlots: (key, timeoutMs) => new PgBudgetSlots(m.db, key, timeoutMs),
    notified: () => m.state.notified(),
    setNotified: (stream, value) => m.state.setNotified(stream, value),
    // Nothing local to move: the server keeps the mirror.
    async verify() {},
    async close() {
      try {
        await m.sink.close();
      } finally {
        await m.release();
      }
    },
  };
}
