/**
 * Upserts into the SQLite mirror: records by id, a record read again replaces the
 * stored one and its child rows (score details, eval results). The values come from store/model/rows.ts;
 * the statements are built from its column lists and prepared once. Callers wrap a page in one
 * transaction (store/sqlite/group-commit.ts). Campaigns are in store/sqlite/campaigns.ts.
 */
import type { CheckedRecord, Endpoint, StreamId } from '../../core/types.js';
import { type SplitRecord, splitDetailed } from '../model/compact.js';
import type { IdConflict, UpsertCounts } from '../model/page.js';
import { COLUMNS, evalRows, roleRow, sessionRow, type Values } from '../model/rows.js';
import { CURRENT_SEQ, NEXT_SEQ_SQL, SEEN_SQL, TOMBSTONE_SQL } from './changes.js';
import type { Db } from './db.js';
import { roleRawSql } from './reassemble.js';
import { insertIgnore, placeholders, update, upsert } from './sql.js';

export type { IdConflict, UpsertCounts };

/**
 * An insert that stamps the row with the write's change number (store/sqlite/changes.ts), bound after the
 * row's values: the number nextChange took, not a subquery of the counter run for every row.
 */
function insertStamped(table: 'session_results' | 'role_results'): string {
  return insertIgnore(table).replace(/, id\) VALUES \((.*)\) ON CONFLICT/, ', id, change_seq) VALUES ($1, ?) ON CONFLICT');
}

/** An update of every column that stamps the row with the write's change number. */
function updateStamped(table: 'session_results' | 'role_results'): string {
  return update(table).replace(/ WHERE id = \?$/, `, change_seq = ${CURRENT_SEQ} WHERE id = ?`);
}

/** Only a record whose content differs from the stored one is rewritten (and counted as updated). */
function updateIfChanged(table: 'session_results' | 'role_results'): string {
  return `${updateStamped(table)} AND raw IS NOT ?`;
}

function prepareStatements(db: Db) {
  return {
    insertSession: db.prepare(insertStamped('session_results')),
    updateSession: db.prepare(updateIfChanged('session_results')),
    insertRole: db.prepare(insertStamped('role_results')),
    updateRole: db.prepare(updateIfChanged('role_results')),
    rewriteRole: db.prepare(updateStamped('role_results')),
    nextSeq: db.prepare(`${NEXT_SEQ_SQL} RETURNING seq`).pluck(),
    seen: db.prepare(SEEN_SQL),
    tombSession: db.prepare(TOMBSTONE_SQL.replace('%TABLE%', 'session_results')),
    tombRole: db.prepare(TOMBSTONE_SQL.replace('%TABLE%', 'role_results')),
    setRoleRaw: db.prepare('UPDATE role_results SET raw = ? WHERE id = ?'),
    fullRoleRaw: db.prepare(`SELECT ${roleRawSql('r')} FROM role_results r WHERE r.id = ?`).pluck(),
    // A detail id another result already holds stays with it (changes = 0): see upsertRoleResults.
    upsertDetail: db.prepare(`${upsert('score_details')} WHERE score_details.role_result_id = excluded.role_result_id`),
    insertEval: db.prepare(
      `INSERT INTO eval_results (${COLUMNS.eval_results.join(', ')}) VALUES (${placeholders(COLUMNS.eval_results.length)})`,
    ),
    deleteEvals: db.prepare('DELETE FROM eval_results WHERE parent_type = ? AND parent_id = ?'),
    deleteDetailEvals: db.prepare(
      "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id IN (SELECT id FROM score_details WHERE role_result_id = ?)",
    ),
    deleteDetails: db.prepare('DELETE FROM score_details WHERE role_result_id = ?'),
    deleteSession: db.prepare('DELETE FROM session_results WHERE id = ?'),
    deleteRole: db.prepare('DELETE FROM role_results WHERE id = ?'),
    // Who holds an id already read by some stream: a record's campaign is part of its identity.
    sessionOwner: db.prepare('SELECT campaign_id FROM session_results WHERE id = ?').pluck(),
    roleOwner: db.prepare('SELECT campaign_id FROM role_results WHERE id = ?').pluck(),
    sessionIds: db.prepare('SELECT id FROM session_results WHERE campaign_id = ?').pluck(),
    roleIds: db.prepare('SELECT id FROM role_results WHERE campaign_id = ? AND report_type IS ?').pluck(),
  };
}

export class SqliteUpserts {
  private readonly s: ReturnType<typeof prepareStatements>;
  /** Characters of JSON text written since takeBytes() last ran (sizes the group commit). */
  private bytes = 0;

  constructor(db: Db) {
    this.s = prepareStatements(db);
  }

  /** Takes the next change number for what the page writes (store/sqlite/changes.ts). Call inside the page's transaction. */
  private nextChange(): number | bigint | null {
    return (this.s.nextSeq.get() as number | bigint | undefined) ?? null;
  }

  /**
   * Upserts session results and their eval results. A stored record of another campaign is left as
   * it is and named in `conflicts` (the campaign that stored an id first keeps it: it never flips).
   * `requestId` is the page's: the versions it brings keep it. Call inside a transaction.
   */
  upsertSessionResults(records: CheckedRecord[], campaignId: string, requestId?: string): UpsertCounts {
    const counts: UpsertCounts = { inserted: 0, updated: 0 };
    const seq = this.nextChange();
    for (const r of records) {
      const values = sessionRow(r, campaignId);
      this.bytes += r.raw.length;
      if (this.s.insertSession.run(...values, seq).changes === 1) counts.inserted++;
      else if (this.heldElsewhere(this.s.sessionOwner, r.id, campaignId, counts)) continue;
      else if (this.s.updateSession.run(...values, r.raw).changes === 1) {
        this.s.deleteEvals.run('session_result', r.id);
        counts.updated++;
      } else continue;
      this.insertEvals(evalRows('session_result', r.id, r.record.eval_results, campaignId));
    }
    if (counts.inserted + counts.updated > 0) this.s.seen.run(requestId ?? null);
    return counts;
  }

  /**
   * Upserts role results, and for DETAILED records their score details and eval results, stored once
   * (store/model/compact.ts). Call inside a transaction.
   */
  upsertRoleResults(records: CheckedRecord[], campaignId: string, reportType: string, requestId?: string): UpsertCounts {
    const counts: UpsertCounts = { inserted: 0, updated: 0 };
    const seq = this.nextChange();
    for (const r of records) {
      // An OVERALL record carries no score details: the ones a DETAILED read stored stay.
      const split = Array.isArray(r.record.score_details) ? splitDetailed(r, campaignId) : undefined;
      const values = roleRow(r, campaignId, reportType, split?.raw);
      this.bytes += (values[values.length - 2] as string).length;
      const inserted = this.s.insertRole.run(...values, seq).changes === 1;
      if (inserted) counts.inserted++;
      else if (this.heldElsewhere(this.s.roleOwner, r.id, campaignId, counts)) continue;
      else if (this.changed(r, values, split)) counts.updated++;
      // Unchanged: its score details and eval results are what this same record stored.
      else continue;
      if (split === undefined) continue;
      if (!inserted) {
        this.s.deleteDetailEvals.run(r.id);
        this.s.deleteDetails.run(r.id);
      }
      this.insertDetails(r, split);
    }
    if (counts.inserted + counts.updated > 0) this.s.seen.run(requestId ?? null);
    return counts;
  }

  /** Whether a stored record `id` belongs to another campaign than `campaignId` (then named in `counts.conflicts`). */
  private heldElsewhere(owner: { get(id: string): unknown }, id: string, campaignId: string, counts: UpsertCounts): boolean {
    const kept = owner.get(id) as string | undefined;
    if (kept === undefined || kept === campaignId) return false;
    (counts.conflicts ??= []).push({ id, kept });
    return true;
  }

  /**
   * Rewrites a stored record that differs from `r`. A DETAILED record whose stripped text is the same
   * may still differ in its details: its full text is rebuilt and compared (a re-read only).
   */
  private changed(r: CheckedRecord, values: Values, split: SplitRecord | undefined): boolean {
    if (this.s.updateRole.run(...values, values[values.length - 2]).changes === 1) return true;
    if (split?.stripped !== true || this.s.fullRoleRaw.get(r.id) === r.raw) return false;
    this.s.rewriteRole.run(...values);
    return true;
  }

  private insertDetails(r: CheckedRecord, split: SplitRecord): void {
    let lost = false;
    for (const detail of split.details) {
      this.bytes += (detail.values[detail.values.length - 3] as string).length;
      if (this.s.upsertDetail.run(...detail.values).changes === 1) this.insertEvals(detail.evals);
      else lost = true;
    }
    // A detail id held by another result cannot be rebuilt from this one's rows: keep its whole text.
    if (lost && split.stripped) this.s.setRoleRaw.run(r.raw, r.id);
  }

  /** The JSON text written since the last call, in characters. */
  takeBytes(): number {
    const n = this.bytes;
    this.bytes = 0;
    return n;
  }

  /** The ids of the records stored for a stream. */
  ids(id: StreamId): string[] {
    return (
      id.endpoint === 'session' ? this.s.sessionIds.all(id.campaignId) : this.s.roleIds.all(id.campaignId, id.reportType)
    ) as string[];
  }

  /**
   * Deletes results with their score details and eval results, leaving a tombstone of each for
   * `export --since-last` (store/sqlite/changes.ts). Call inside a transaction.
   */
  remove(endpoint: Endpoint, ids: string[], at = new Date().toISOString()): number {
    let n = 0;
    if (ids.length > 0) this.nextChange();
    for (const id of ids) {
      if (endpoint === 'session') this.s.tombSession.run('session_results', at, id);
      else this.s.tombRole.run('role_results', at, id);
      if (endpoint === 'session') {
        this.s.deleteEvals.run('session_result', id);
        n += this.s.deleteSession.run(id).changes;
      } else {
        this.s.deleteDetailEvals.run(id);
        this.s.deleteDetails.run(id);
        n += this.s.deleteRole.run(id).changes;
      }
    }
    return n;
  }

  private insertEvals(rows: unknown[][]): void {
    for (const values of rows) this.s.insertEval.run(...values);
  }
}
