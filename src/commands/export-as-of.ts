/**
 * `export --as-of <timestamp>`: session or role results as the mirror held them at that time
 * (result_versions, store/versions.ts), whichever database holds it: each record's version then,
 * deletions left out, in the table's columns (id first) followed by `version` and `valid_from`.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Mirror } from '../app/factory.js';
import { ExportInterrupted, errorCode, isAbort, StorageError, storageError, UsageError } from '../errors.js';
import { csvLine } from '../export/csv.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { untilAborted } from '../export/interrupt.js';
import { FileSink, type Sink, StreamSink } from '../export/sink.js';
import { chosenColumns } from '../export/tables.js';
import { asOfTime } from '../export/timestamp.js';
import { ndjsonTransform } from '../export/writers.js';
import type { Output } from '../ui/output.js';
import { formatCount } from '../ui/table.js';

export interface AsOfJob {
  table: string;
  asOf: string;
  format: 'csv' | 'ndjson' | 'parquet';
  campaign: string | undefined;
  columns: string | undefined;
  rawCsv: boolean;
  target: string | undefined;
}

const KIND_OF: Record<string, 'session' | 'role'> = { 'session-results': 'session', 'role-results': 'role' };

/** Declared types for Parquet (export/parquet.ts parquetKind): the rest are text, or times by their name. */
const DECLARED: Record<string, string> = { score: 'REAL', overall_score: 'REAL', order_index: 'INTEGER', version: 'INTEGER' };

/** `--as-of`'s value, checked: a bad one is a usage error before anything is opened. A future time is fine. */
export function checkAsOf(flags: { asOf: string; table: string; sinceLast?: string; since?: string; until?: string }): string {
  const at = asOfTime(flags.asOf);
  if (at === null) {
    throw new UsageError(`--as-of: "${flags.asOf}" is not a timestamp; give an ISO 8601 date-time such as 2026-03-01T12:00:00Z, or a date`);
  }
  if (!(flags.table in KIND_OF)) throw new UsageError('--as-of: only session-results and role-results keep their versions');
  if (flags.sinceLast !== undefined) throw new UsageError('--as-of does not go with --since-last');
  if (flags.since !== undefined || flags.until !== undefined) throw new UsageError('--as-of does not go with --since or --until');
  return at;
}

export async function exportAsOf(mirror: Mirror, job: AsOfJob, out: Output, stdout: Writable, signal?: AbortSignal): Promise<number> {
  const kind = KIND_OF[job.table] as 'session' | 'role';
  const reader = await mirror.versions();
  let partial: PartialFile | undefined;
  let rows = 0;
  try {
    const found = reader.asOf(kind, job.asOf, job.campaign);
    const columns = job.columns === undefined ? found.columns : chosenColumns(job.columns, found.columns, job.table);
    const pick = columns.map((c) => found.columns.indexOf(c));
    const source = (async function* () {
      for await (const row of found.rows) yield pick.map((i) => row[i]);
    })();
    const arrays = untilAborted(source, signal);
    if (job.target !== undefined) {
      cleanStalePartials(job.target);
      partial = new PartialFile(job.target);
    }
    try {
      const sink = (): Sink => (partial !== undefined ? new FileSink(partial.fd) : new StreamSink(stdout, false, signal));
      if (job.format === 'csv') {
        const s = sink();
        s.write(csvLine(columns, true));
        for await (const row of arrays) {
          if (!s.write(csvLine(row, job.rawCsv))) await s.drain();
          rows++;
        }
        await s.end();
      } else if (job.format === 'parquet') {
        const { parquetKind, writeParquet } = await import('../export/parquet.js');
        const s = sink();
        const result = await writeParquet(
          columns.map((name) => ({ name, kind: parquetKind(name, DECLARED[name] ?? null) })),
          arrays,
          s,
        );
        rows = result.rows;
        await s.end();
      } else {
        const objects = (async function* () {
          for await (const row of arrays) {
            rows++;
            yield Object.fromEntries(columns.map((c, i) => [c, row[i]]));
          }
        })();
        await pipeline(objects, ndjsonTransform(), partial?.stream ?? stdout, { end: partial !== undefined });
      }
    } catch (err) {
      if (errorCode(err) === 'EPIPE' && partial === undefined) return 0;
      throw err;
    }
    if (partial !== undefined) {
      signal?.throwIfAborted();
      partial.commit();
      partial = undefined;
      out.info(`wrote ${formatCount(rows)} rows of ${job.table} as of ${job.asOf} to ${job.target}`);
      out.document({ table: job.table, format: job.format, rows, path: job.target, as_of: job.asOf });
    }
    return 0;
  } catch (err) {
    partial?.discard();
    if (isAbort(err) && signal?.aborted) throw new ExportInterrupted(job.target);
    if (err instanceof StorageError || err instanceof UsageError) throw err;
    if (errorCode(err)?.startsWith('SQLITE_')) throw storageError(err, `cannot read ${mirror.target.path}`);
    throw storageError(err, `cannot write ${job.target ?? 'stdout'}`);
  } finally {
    await reader.close();
  }
}
