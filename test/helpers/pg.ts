/**
 * PostgreSQL for a test file: the run's server (test/pg-global-setup.ts), a schema of its own per
 * test, and `describePg`, which fails loudly under CI when no server could be started and skips with
 * a visible message elsewhere.
 */
import pg from 'pg';
import { describe, it } from 'vitest';
import type { PageSink } from '../../src/store/port.js';
import type { UpsertCounts } from '../../src/store/sqlite/upserts.js';
import { atFileEnd } from './file-end.js';

export const PG_URL = process.env.CAMPAIGN_SYNC_TEST_PG_URL ?? '';
const PG_ERROR = process.env.CAMPAIGN_SYNC_TEST_PG_ERROR ?? 'CAMPAIGN_SYNC_TEST_PG_URL is not set';

/** `describe` for PostgreSQL tests: runs them, or fails (CI) / skips (elsewhere) saying why. */
export function describePg(name: string, fn: () => void): void {
  if (PG_URL) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs a PostgreSQL server', () => {
        throw new Error(`no PostgreSQL server for the tests: ${PG_ERROR}`);
      });
    });
    return;
  }
  // The run's one line saying why and what to install is test/pg-global-setup.ts's.
  describe.skip(name, fn);
}

let counter = 0;
const schemas: string[] = [];

/** A schema name no other test uses (dropped after the file's tests). */
export function freshSchema(): string {
  const name = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  schemas.push(name);
  return name;
}

/** A client on the test server (the caller ends it); `url`: another database of it. */
export async function pgClient(url = PG_URL): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/** The rows of `sql` (with its parameters) run in `schema`, on a client of its own (on `url`'s database). */
export async function pgRows(schema: string, sql: string, values: unknown[] = [], url = PG_URL): Promise<Array<Record<string, unknown>>> {
  const c = await pgClient(url);
  try {
    await c.query(`SET search_path TO ${schema}`);
    return (await c.query(sql, values)).rows;
  } finally {
    await c.end();
  }
}

atFileEnd(async () => {
  if (!PG_URL || schemas.length === 0) return;
  const c = await pgClient();
  try {
    for (const s of schemas.splice(0)) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  } finally {
    await c.end();
  }
});

/**
 * Hands a page to `sink` and waits until it committed (commitPage may resolve while the page is still
 * queued, store/pg/page-queue.ts); resolves with the counts of the stream's pages committed meanwhile.
 */
export async function commitNow(sink: PageSink, ...[id, records, move]: Parameters<PageSink['commitPage']>): Promise<UpsertCounts> {
  const handed = await sink.commitPage(id, records, move);
  const rest = await sink.settle(id);
  const conflicts = [...(handed.conflicts ?? []), ...(rest.conflicts ?? [])];
  return {
    inserted: handed.inserted + rest.inserted,
    updated: handed.updated + rest.updated,
    ...(conflicts.length > 0 ? { conflicts } : {}),
  };
}
