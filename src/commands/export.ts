import { closeSync, createWriteStream, openSync, renameSync, rmSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { resolveDbPath } from '../config/config.js';
import { parseDate } from '../config/duration.js';
import { UsageError } from '../errors.js';
import { EXPORT_TABLES, type ExportTable, exportQuery } from '../export/tables.js';
import { csvTransform, ndjsonTransform, rowStream } from '../export/writers.js';
import { openDatabase } from '../store/db.js';
import { Output } from '../ui/output.js';

export interface ExportFlags {
  db?: string;
  table: string;
  format?: string;
  output?: string;
  campaign?: string;
  since?: string;
  until?: string;
  rawCsv?: boolean;
  quiet?: boolean;
}

/** `campaign-sync export`: streams one table of the mirror to a file (0600) or stdout. */
export async function exportTable(flags: ExportFlags, stdout: Writable = process.stdout): Promise<number> {
  const out = new Output({ quiet: flags.quiet });
  if (!(flags.table in EXPORT_TABLES)) throw new UsageError(`--table: must be one of ${Object.keys(EXPORT_TABLES).join(', ')}`);
  const format = flags.format ?? 'csv';
  if (format !== 'csv' && format !== 'ndjson') throw new UsageError('--format: must be csv or ndjson');
  const since = flags.since === undefined ? undefined : parseDate(flags.since, '--since');
  const until = flags.until === undefined ? undefined : parseDate(flags.until, '--until');
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);

  const db = openDatabase(resolveDbPath(flags.db), { mustExist: true, readonly: true });
  // Written to a temporary file and renamed at the end, so a failed export never leaves half a file
  // where a complete one is expected.
  const temp = flags.output === undefined ? undefined : `${flags.output}.partial-${process.pid}`;
  let rows = 0;
  let iterator: IterableIterator<Record<string, unknown>> | undefined;
  try {
    const { sql, params } = exportQuery(flags.table as ExportTable, { campaign: flags.campaign, since, until });
    const stmt = db.prepare(sql).safeIntegers(true);
    const columns = stmt.columns().map((c) => c.name);
    iterator = stmt.iterate(...params) as IterableIterator<Record<string, unknown>>;
    const source = iterator;
    const counted = (function* () {
      for (const row of source) {
        rows++;
        yield row;
      }
    })();
    const encoder = format === 'csv' ? csvTransform(columns, { raw: flags.rawCsv === true }) : ndjsonTransform();
    let sink: Writable = stdout;
    if (temp !== undefined) {
      closeSync(openSync(temp, 'w', 0o600));
      sink = createWriteStream(temp, { flags: 'w', mode: 0o600 });
    }
    try {
      await pipeline(rowStream(counted), encoder, sink, { end: temp !== undefined });
    } catch (err) {
      // `export … | head` closes the pipe early: that is the reader's choice, not an error.
      if ((err as NodeJS.ErrnoException).code === 'EPIPE' && temp === undefined) return 0;
      throw err;
    }
    if (temp !== undefined && flags.output !== undefined) {
      renameSync(temp, flags.output);
      out.info(`wrote ${rows} rows of ${flags.table} to ${flags.output}`);
    }
    return 0;
  } catch (err) {
    if (temp !== undefined) rmSync(temp, { force: true });
    // File system errors (ENOENT, EACCES, ENOSPC…) are the user's to fix: exit 2, one line.
    if (/^E[A-Z]+$/.test((err as NodeJS.ErrnoException).code ?? '')) {
      throw new UsageError(`cannot write ${flags.output ?? 'stdout'}: ${(err as Error).message}`);
    }
    throw err;
  } finally {
    // The statement stays busy until its iterator ends, and a busy connection cannot close.
    iterator?.return?.();
    db.close();
  }
}
