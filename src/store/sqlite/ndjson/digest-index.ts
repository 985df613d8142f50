/**
 * What each NDJSON results file holds: per record (and report type, since a role file may receive
 * both reports of one record), a digest of the last line written for it (`ndjson_records`). With it a
 * record read again is appended only when its content changed, counted as new, updated or unchanged
 * as in the SQLite mirror, and `reconcile` knows which records a folder holds. Entries are written in
 * the same transaction as the file's committed length, so they stay in step with the file.
 */
import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { openOwnFile } from '../../../core/fs/private-file.js';
import { storageError } from '../../../errors.js';
import type { Db } from '../db.js';

/** The digest of a line (without its newline): enough to tell a changed record from an unchanged one. */
export function lineDigest(line: string): string {
  return createHash('sha1').update(line).digest('base64url');
}

/** SQL: the `sync_state.stream` of the `ndjson_records` row aliased `n` (`<campaign>/session`, `<campaign>/role/<report>`). */
export const RECORD_STREAM = "n.campaign_id || CASE n.report_type WHEN 'session' THEN '/session' ELSE '/role/' || n.report_type END";

/** A tombstone line (reconcile --prune): the record was deleted by the service. */
export interface TombstoneLine {
  id: string;
  campaign_id: string;
  _deleted_at: string;
}

export function isTombstone(value: unknown): value is TombstoneLine {
  return value !== null && typeof value === 'object' && typeof (value as TombstoneLine)._deleted_at === 'string';
}

export class NdjsonIndex {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      get: db.prepare('SELECT digest FROM ndjson_records WHERE path = ? AND report_type = ? AND id = ?').pluck(),
      entry: db.prepare('SELECT digest, campaign_id FROM ndjson_records WHERE path = ? AND report_type = ? AND id = ?'),
      set: db.prepare(
        'INSERT INTO ndjson_records (path, report_type, id, campaign_id, digest) VALUES (?, ?, ?, ?, ?) ON CONFLICT (path, report_type, id) DO UPDATE SET digest = excluded.digest',
      ),
      remove: db.prepare('DELETE FROM ndjson_records WHERE path = ? AND report_type = ? AND id = ?'),
      ids: db.prepare('SELECT id FROM ndjson_records WHERE path = ? AND report_type = ? AND campaign_id = ?').pluck(),
      indexed: db.prepare('SELECT indexed FROM ndjson_files WHERE path = ?').pluck(),
      markIndexed: db.prepare('UPDATE ndjson_files SET indexed = 1 WHERE path = ?'),
      clear: db.prepare('DELETE FROM ndjson_records WHERE path = ?'),
    };
  }

  /** The digest of the last line written for a record, if the file holds it. */
  digest(path: string, reportType: string, id: string): string | undefined {
    return this.s.get.get(path, reportType, id) as string | undefined;
  }

  /** The digest of the last line written for a record, and the campaign it was written for, if the file holds it. */
  entry(path: string, reportType: string, id: string): { digest: string; campaign_id: string } | undefined {
    return this.s.entry.get(path, reportType, id) as { digest: string; campaign_id: string } | undefined;
  }

  /** Whether the file's records are in the index (a file written before it existed is not, until ensureIndexed). */
  isIndexed(path: string): boolean {
    return this.s.indexed.get(path) === 1;
  }

  /** Records the line just written for a record. Call inside the write's transaction. */
  set(path: string, reportType: string, id: string, campaignId: string, digest: string): void {
    this.s.set.run(path, reportType, id, campaignId, digest);
  }

  /** Forgets a record (a tombstone was written, or its lines were erased). Call inside a transaction. */
  remove(path: string, reportType: string, id: string): void {
    this.s.remove.run(path, reportType, id);
  }

  /** Every record the file holds for one campaign and report type. */
  ids(path: string, reportType: string, campaignId: string): string[] {
    return this.s.ids.all(path, reportType, campaignId) as string[];
  }

  /**
   * Builds the entries of a file written before the index existed (schema v3 or older), from its
   * committed lines; the last line of a record wins and a tombstone removes it. Runs once per file.
   */
  ensureIndexed(path: string, committed: number, reportTypeOf: (record: Record<string, unknown>) => string): void {
    if (this.s.indexed.get(path) !== 0) return;
    const entries = new Map<string, { reportType: string; id: string; campaignId: string; digest: string | undefined }>();
    try {
      forEachLine(path, committed, (line) => {
        let record: unknown;
        try {
          record = JSON.parse(line);
        } catch {
          return;
        }
        if (record === null || typeof record !== 'object') return;
        const r = record as Record<string, unknown>;
        if (typeof r.id !== 'string') return;
        if (isTombstone(r)) {
          for (const [key, e] of entries) if (e.id === r.id) entries.set(key, { ...e, digest: undefined });
          return;
        }
        const reportType = reportTypeOf(r);
        const campaign = r.campaign as { id?: unknown } | null | undefined;
        const campaignId = String((campaign && typeof campaign === 'object' ? campaign.id : undefined) ?? r.campaign_id ?? '');
        entries.set(`${reportType}\n${r.id}`, { reportType, id: r.id, campaignId, digest: lineDigest(line) });
      });
    } catch (err) {
      throw storageError(err, `cannot read ${path}`);
    }
    this.db.transaction(() => {
      this.s.clear.run(path);
      for (const e of entries.values()) if (e.digest !== undefined) this.s.set.run(path, e.reportType, e.id, e.campaignId, e.digest);
      this.s.markIndexed.run(path);
    })();
  }
}

/** Calls `fn` with each complete line of the first `limit` bytes of a file, reading in chunks. */
export function forEachLine(path: string, limit: number, fn: (line: string) => void): void {
  const fd = openOwnFile(path);
  try {
    const chunk = Buffer.alloc(1 << 20);
    let rest = Buffer.alloc(0);
    let position = 0;
    while (position < limit) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, limit - position), position);
      if (n === 0) break;
      position += n;
      let data = Buffer.concat([rest, chunk.subarray(0, n)]);
      let start = 0;
      for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
        fn(data.toString('utf8', start, nl));
        start = nl + 1;
      }
      data = data.subarray(start);
      rest = Buffer.from(data);
    }
  } finally {
    closeSync(fd);
  }
}
