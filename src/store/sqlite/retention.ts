/**
 * A retention setting applied to a SQLite mirror and its NDJSON files (store/model/retention.ts says
 * when): the results dated before now minus the retention erased as `forget --older-than` erases them
 * (store/sqlite/erasure.ts), under the run lock the caller holds, before any NDJSON file is opened.
 */

import { RETENTION_RAN_KEY, retentionDue } from '../model/retention.js';
import type { Db } from './db.js';
import { type Erasure, eraseOlderThan } from './erasure.js';

/** When the retention last ran (ISO 8601), if ever. */
export function retentionRanAt(db: Db): string | undefined {
  return db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(RETENTION_RAN_KEY) as string | undefined;
}

/** Erases what a retention of `retentionMs` removes at `now` if it is due, and records that it ran; undefined when not due. */
export function applyRetention(db: Db, retentionMs: number, now: number): (Erasure & { before: number }) | undefined {
  if (!retentionDue(retentionRanAt(db), now)) return undefined;
  const before = now - retentionMs;
  const done = eraseOlderThan(db, before);
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    RETENTION_RAN_KEY,
    new Date(now).toISOString(),
  );
  return { ...done, before };
}
