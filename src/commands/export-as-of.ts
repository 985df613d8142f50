/**
 * `export --as-of <timestamp>`: session or role results as the mirror held them at that time
 * (result_versions), whichever database holds it: each record's version then, deletions left out,
 * in the table's columns (id first) followed by `version` and `valid_from`.
 */
import type { Writable } from 'node:stream';
import type { Mirror } from '../app/factory.js';
import { ExportInterrupted, errorCode, isAbort, StorageError, storageError, UsageError } from '../errors.js';
import { recordsElsewhereError, selectedCampaign } from '../export/campaign.js';
import { chosenColumns } from '../export/tables.js';
import type { Output } from '../ui/output.js';
import { type ExportPlan, KIND_OF } from './export-plan.js';
import { writeExport } from './export-write.js';

/** Declared types for Parquet (export/parquet.ts parquetKind): the rest are text, or times by their name. */
const DECLARED: Record<string, string> = {
  score: 'REAL',
  overall_score: 'REAL',
  order_index: 'INTEGER',
  version: 'INTEGER',
  valid_from: 'TIMESTAMP',
};

export async function exportAsOf(
  mirror: Mirror,
  plan: ExportPlan & { asOf: string },
  out: Output,
  stdout: Writable,
  signal?: AbortSignal,
): Promise<number> {
  const kind = KIND_OF[plan.table] as 'session' | 'role';
  const reader = await mirror.versions();
  try {
    const elsewhere = await reader.recordsElsewhere(kind);
    // Only a SQLite file keeps an NDJSON pull's state: its path holds no password.
    if (elsewhere !== undefined) throw recordsElsewhereError(mirror.target.path, `${plan.table} history`, elsewhere);
    // An id or a name, as every other --campaign takes it; one that names nothing is exit 2.
    const campaign = plan.campaign === undefined ? undefined : selectedCampaign(plan.campaign, await reader.campaignIds(plan.campaign));
    // A time before the first change recorded: nothing was held then, which is not "no results".
    const start = await reader.start();
    if (start === null) out.warn(`--as-of ${plan.asOf}: the mirror holds no history yet; history starts at the first pull`);
    else if (plan.asOf < start) out.warn(`--as-of ${plan.asOf} is before the mirror's history: history starts at ${start}`);
    const found = reader.asOf(kind, plan.asOf, campaign);
    const columns = plan.columns === undefined ? found.columns : chosenColumns(plan.columns, found.columns, plan.table);
    const pick = columns.map((c) => found.columns.indexOf(c));
    const rows = async function* () {
      for await (const row of found.rows) yield pick.map((i) => row[i]);
    };
    // Versions are read row by row: no row-id ranges.
    const ranges = () => undefined;
    await writeExport(plan, { columns, types: columns.map((c) => DECLARED[c] ?? null), rows, ranges }, out, stdout, signal);
    return 0;
  } catch (err) {
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(plan.target);
    if (err instanceof StorageError || err instanceof UsageError) throw err;
    if (errorCode(err)?.startsWith('SQLITE_')) throw storageError(err, `cannot read ${mirror.target.path}`);
    throw storageError(err, `cannot write ${plan.target ?? 'stdout'}`);
  } finally {
    await reader.close();
  }
}
