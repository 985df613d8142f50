import { statSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { resolveDbPath } from '../config/config.js';
import { parseDate } from '../config/duration.js';
import { exportSchema, parseSettings } from '../config/schema.js';
import { errorCode, storageError, UsageError } from '../errors.js';
import { cleanStalePartials, PartialFile } from '../export/file.js';
import { EXPORT_TABLES, type ExportTable, exportQuery } from '../export/tables.js';
import { csvTransform, ndjsonTransform, rowStream } from '../export/writers.js';
import { Campaigns } from '../store/campaigns.js';
import { type Db, openDatabase } from '../store/db.js';
import { isPgUrl } from '../store/pg/url.js';
import { Output } from '../ui/output.js';
import { formatCount } from '../ui/table.js';

export interface ExportFlags {
  db?: string;
  pgSchema?: string;
  table: string;
  format?: string;
  output?: string;
  campaign?: string;
  since?: string;
  until?: string;
  rawCsv?: boolean;
  quiet?: boolean;
  json?: boolean;
}

/** An existing folder given as -o is a bad flag value, found before any work. */
function checkOutput(path: string): void {
  let isFolder = false;
  try {
    isFolder = statSync(path).isDirectory();
  } catch {
    return; // absent (the usual case) or unreachable: creating the file reports it
  }
  if (isFolder) throw new UsageError(`-o ${path}: is a folder; give a file name`);
}

/** `--campaign`: an id or a name, as `pull` and `reset` take it; one that matches nothing is exit 2. */
function campaignId(db: Db, selector: string): string {
  const ids = new Campaigns(db).idsFor(selector);
  if (ids.length === 1) return ids[0] as string;
  if (ids.length > 1) throw new UsageError(`--campaign: "${selector}" names ${ids.length} campaigns; use the id`);
  throw new UsageError(`--campaign: no campaign with the id or name "${selector}" in this database (see \`campaign-sync status\`)`);
}

/** `campaign-sync export`: streams one table of the mirror to a file (0600) or stdout. */
export async function exportTable(flags: ExportFlags, stdout: Writable = process.stdout): Promise<number> {
  const out = new Output({ quiet: flags.quiet, json: flags.json });
  // The data goes to stdout without -o: there is no room for a document beside it.
  if (flags.json && flags.output === undefined) throw new UsageError('--json prints a summary of the export: give -o <file> for the data');
  if (!(flags.table in EXPORT_TABLES)) throw new UsageError(`--table: must be one of ${Object.keys(EXPORT_TABLES).join(', ')}`);
  const { format } = parseSettings(exportSchema, { format: flags.format });
  const since = flags.since === undefined ? undefined : parseDate(flags.since, '--since');
  const until = flags.until === undefined ? undefined : parseDate(flags.until, '--until');
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);
  const target = flags.output;
  if (target !== undefined) checkOutput(target);

  const dbPath = resolveDbPath(flags.db);
  if (isPgUrl(dbPath)) {
    const table = flags.table as ExportTable;
    const job = { url: dbPath, pgSchema: flags.pgSchema, table, format, campaign: flags.campaign, since, until, target };
    return (await import('./export-pg.js')).exportFromPg({ ...job, rawCsv: flags.rawCsv === true }, out, stdout);
  }
  const db = openDatabase(dbPath, { mustExist: true, readonly: true });
  // Written to a private temporary file and renamed at the end (export/file.ts), so a failed export
  // never leaves half a file where a complete one is expected.
  let partial: PartialFile | undefined;
  let rows = 0;
  let iterator: IterableIterator<Record<string, unknown>> | undefined;
  try {
    const campaign = flags.campaign === undefined ? undefined : campaignId(db, flags.campaign);
    const { sql, params } = exportQuery(flags.table as ExportTable, { campaign, since, until });
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
    if (target !== undefined) {
      cleanStalePartials(target);
      partial = new PartialFile(target);
    }
    try {
      await pipeline(rowStream(counted), encoder, partial?.stream ?? stdout, { end: partial !== undefined });
    } catch (err) {
      // `export … | head` closes the pipe early: that is the reader's choice, not an error.
      if (errorCode(err) === 'EPIPE' && partial === undefined) return 0;
      throw err;
    }
    if (partial !== undefined) {
      partial.commit();
      partial = undefined;
      out.info(`wrote ${formatCount(rows)} rows of ${flags.table} to ${target}`);
      out.document({ table: flags.table, format, rows, path: target });
    }
    return 0;
  } catch (err) {
    partial?.discard();
    // Local storage failures exit 74 naming the user's own path, never the temporary file's.
    if (errorCode(err)?.startsWith('SQLITE_')) throw storageError(err, `cannot read ${dbPath}`);
    throw storageError(err, `cannot write ${target ?? 'stdout'}`);
  } finally {
    // The statement stays busy until its iterator ends, and a busy connection cannot close.
    iterator?.return?.();
    db.close();
  }
}
