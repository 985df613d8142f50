/**
 * Record ids served by two campaigns (a fault of the service: records are upserted by
 * id). A record's campaign is part of its identity: the campaign whose stream stored an id first
 * keeps it, and another campaign's copy is skipped on every read, so the stored record never flips
 * between them. `id_conflicts` remembers each skipped copy once (the stream it was served through,
 * the id, both campaigns, when it was first seen): its warning is given the first time only, and
 * `status` counts them per stream. PostgreSQL keeps them by the same rule (store/pg/sink.ts).
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { StreamId } from '../../core/types.js';
import type { Db } from './db.js';

type Statement = BetterSqlite3.Statement<unknown[]>;

import type { IdConflict } from '../model/page.js';

/** Each stream's count of skipped copies. */
export const CONFLICT_COUNTS_SQL = 'SELECT stream, count(*) AS n FROM id_conflicts GROUP BY stream';

/** Records a skipped copy unless it was recorded before. Parameters: stream, id, campaign, kept campaign, time. */
export const RECORD_CONFLICT_SQL =
  'INSERT INTO id_conflicts (stream, record_id, campaign_id, kept_campaign_id, first_seen_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (stream, record_id) DO NOTHING';

export class IdConflicts {
  private insert: Statement | undefined;
  private readonly counts: Statement | undefined;

  constructor(private readonly db: Db) {
    // A database opened read-only at an older schema (status) has no such table: no conflicts.
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'id_conflicts'").get() !== undefined;
    this.counts = exists ? db.prepare(CONFLICT_COUNTS_SQL) : undefined;
  }

  /** Records the skipped copies of a page; returns those seen for the first time. Call inside the page's transaction. */
  record(id: StreamId, conflicts: IdConflict[] | undefined, at: string): IdConflict[] | undefined {
    if (conflicts === undefined || conflicts.length === 0) return undefined;
    // Prepared on first use: most databases never see a conflict.
    const insert = (this.insert ??= this.db.prepare(RECORD_CONFLICT_SQL));
    const fresh = conflicts.filter((c) => insert.run(id.key, c.id, id.campaignId, c.kept, at).changes === 1);
    return fresh.length === 0 ? undefined : fresh;
  }

  /** Forgets a stream's skipped copies (its row in `sync_state` is removed). Call inside a transaction. */
  forget(stream: string): void {
    this.db.prepare('DELETE FROM id_conflicts WHERE stream = ?').run(stream);
  }

  /** Each stream's count of skipped copies. */
  perStream(): Map<string, number> {
    const rows = (this.counts?.all() ?? []) as Array<{ stream: string; n: number }>;
    return new Map(rows.map((r) => [r.stream, Number(r.n)]));
  }
}
