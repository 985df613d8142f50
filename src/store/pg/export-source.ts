/**
 * `export` from a PostgreSQL team mirror (the ExportSource of store/port.ts): a table's rows
 * streamed from a server-side cursor (export.ts), a consumer's changes in one snapshot that never
 * misses a change another worker had under way (changes.ts).
 */
import { UsageError } from '../../errors.js';
import { EXPORT_TABLES } from '../model/export-tables.js';
import type { ExportSource, MirrorTarget } from '../port.js';
import { campaignIdsFor, campaignType } from './campaigns.js';
import { readPgChanges, rememberPgConsumer } from './changes.js';
import { PgDatabase } from './database.js';
import { pgExportRows } from './export.js';

export async function openPgExport(t: MirrorTarget, opts: { forChanges: boolean }): Promise<ExportSource> {
  // Read-write for --since-last: the consumer's place is written (and an older mirror gets its change numbers).
  const db = await PgDatabase.open(t.path, t.pgSchema, {
    connections: 2,
    mustExist: true,
    where: t.where,
    ...(opts.forChanges ? { upgrade: true } : {}),
  });
  return {
    campaignIds: (selector) => campaignIdsFor(db, selector),
    campaignType: (id) => campaignType(db, id),
    // A team mirror's records are always in its tables (it has no NDJSON destination).
    recordsElsewhere: async () => undefined,
    async rows(q) {
      const spec = EXPORT_TABLES[q.table];
      const found = await pgExportRows(db, { ...spec, campaign: q.campaign, since: q.since, until: q.until }, (available) => {
        if (available.length === 0)
          throw new UsageError(`--table ${q.table}: the mirror has no ${spec.table}; run \`campaign-sync pull\` once to upgrade it`);
        return q.columns === undefined ? available : q.columns(available);
      });
      return {
        columns: found.columns,
        types: found.types,
        rows: async function* () {
          for await (const row of found.rows) yield Object.values(row);
        },
        // Streamed from a server-side cursor: no row-id ranges.
        ranges: () => undefined,
      };
    },
    async changes(consumer, name, choose) {
      const read = await readPgChanges(db, consumer, name, (available) => {
        if (available.length === 0)
          throw new UsageError(
            `--table ${name}: the mirror has no ${EXPORT_TABLES[name].table}; run \`campaign-sync pull\` once to upgrade it`,
          );
        return choose === undefined ? available : choose(available);
      });
      return {
        window: read.window,
        columns: read.columns,
        types: read.types,
        tombstones: () => read.tombstones(),
        rows: () => read.rows(),
        end: () => read.end(),
        abort: () => read.abort(),
      };
    },
    remember: (consumer, name, to, at) => rememberPgConsumer(db, consumer, name, to, at),
    // Its errors already say what failed (store/pg/database.ts failure).
    failure: () => undefined,
    close: () => db.close(),
  };
}
