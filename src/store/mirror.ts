/**
 * Upserts into the mirror (PRODUCT.md §5): records by id, a record read again replaces the stored
 * one and its child rows (score details, eval results). Statements are prepared once; callers wrap
 * a page in one transaction (see store/sink.ts). Campaigns are in store/campaigns.ts.
 */
import { toJson } from '../core/json.js';
import type { CheckedRecord } from '../core/types.js';
import type { Db } from './db.js';

type Row = Record<string, unknown>;

/** A text column: strings as they are, other scalars as text, objects as JSON. */
export function text(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return toJson(v);
  return String(v);
}

/** A REAL column: numbers, and numeric strings (eval scores arrive as strings). */
function real(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** A JSON text column: absent and null become NULL. */
function json(v: unknown): string | null {
  return v === undefined || v === null ? null : toJson(v);
}

function obj(v: unknown): Row {
  return v !== null && typeof v === 'object' ? (v as Row) : {};
}

function cefrOf(additional: unknown): string | null {
  return text(obj(obj(additional).cefr).score);
}

export interface UpsertCounts {
  inserted: number;
  updated: number;
}

function prepareStatements(db: Db) {
  const sessionCols =
    'campaign_id, user_id, user_email, session_id, scenario_id, scenario_name, scenario_type, score, cefr, feedback, additional_scores, created_at, updated_at, order_index, raw';
  const roleCols =
    'campaign_id, user_id, user_email, recommendation_status, overall_score, cefr, additional_scores, report_type, created_at, updated_at, order_index, raw';
  const detailCols =
    'role_result_id, campaign_id, user_id, user_email, scenario_id, scenario_name, scenario_type, session_id, score, feedback, created_at, updated_at, raw';
  const insert = (table: string, cols: string) =>
    db.prepare(`INSERT INTO ${table} (id, ${cols}) VALUES (?${', ?'.repeat(cols.split(',').length)}) ON CONFLICT (id) DO NOTHING`);
  const update = (table: string, cols: string) =>
    db.prepare(
      `UPDATE ${table} SET ${cols
        .split(', ')
        .map((c) => `${c} = ?`)
        .join(', ')} WHERE id = ?`,
    );
  return {
    insertSession: insert('session_results', sessionCols),
    updateSession: update('session_results', sessionCols),
    insertRole: insert('role_results', roleCols),
    updateRole: update('role_results', roleCols),
    upsertDetail: db.prepare(
      `INSERT INTO score_details (id, ${detailCols}) VALUES (?${', ?'.repeat(13)}) ON CONFLICT (id) DO UPDATE SET ${detailCols
        .split(', ')
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')}`,
    ),
    insertEval: db.prepare(
      'INSERT INTO eval_results (parent_type, parent_id, evaluation_id, skill_key, skill_label, score, score_text, rationale, evaluated_at, campaign_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    deleteEvals: db.prepare('DELETE FROM eval_results WHERE parent_type = ? AND parent_id = ?'),
    deleteDetailEvals: db.prepare(
      "DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id IN (SELECT id FROM score_details WHERE role_result_id = ?)",
    ),
    deleteDetails: db.prepare('DELETE FROM score_details WHERE role_result_id = ?'),
  };
}

export class Mirror {
  private readonly s: ReturnType<typeof prepareStatements>;

  constructor(db: Db) {
    this.s = prepareStatements(db);
  }

  /** Upserts session results and their eval results. Call inside a transaction. */
  upsertSessionResults(records: CheckedRecord[], campaignId: string): UpsertCounts {
    const counts = { inserted: 0, updated: 0 };
    for (const r of records) {
      const x = r.record;
      const user = obj(x.user);
      const scenario = obj(x.scenario);
      const values = [
        campaignId,
        text(user.id),
        text(user.email),
        text(obj(x.session).id),
        text(scenario.id),
        text(scenario.name),
        text(obj(scenario.type).key),
        real(x.score),
        cefrOf(x.additional_scores),
        json(x.feedback),
        json(x.additional_scores),
        text(x.created_at),
        text(x.updated_at),
        r.orderIndex,
        r.raw,
      ];
      if (this.s.insertSession.run(r.id, ...values).changes === 1) counts.inserted++;
      else {
        this.s.updateSession.run(...values, r.id);
        this.s.deleteEvals.run('session_result', r.id);
        counts.updated++;
      }
      this.insertEvals('session_result', r.id, x.eval_results, campaignId);
    }
    return counts;
  }

  /** Upserts role results, and for DETAILED records their score details and eval results. Call inside a transaction. */
  upsertRoleResults(records: CheckedRecord[], campaignId: string, reportType: string): UpsertCounts {
    const counts = { inserted: 0, updated: 0 };
    for (const r of records) {
      const x = r.record;
      const user = obj(x.user);
      const values = [
        campaignId,
        text(user.id),
        text(user.email),
        text(x.recommendation_status),
        real(x.overall_score),
        cefrOf(x.additional_scores),
        json(x.additional_scores),
        reportType,
        text(x.created_at),
        text(x.updated_at),
        r.orderIndex,
        r.raw,
      ];
      const inserted = this.s.insertRole.run(r.id, ...values).changes === 1;
      if (inserted) counts.inserted++;
      else {
        this.s.updateRole.run(...values, r.id);
        counts.updated++;
      }
      // An OVERALL record carries no score details: the ones a DETAILED read stored stay.
      if (!Array.isArray(x.score_details)) continue;
      if (!inserted) {
        this.s.deleteDetailEvals.run(r.id);
        this.s.deleteDetails.run(r.id);
      }
      for (const d of x.score_details as unknown[]) {
        const detail = obj(d);
        const id = text(detail.id);
        if (id === null) continue;
        const du = obj(detail.user);
        const scenario = obj(detail.scenario);
        this.s.upsertDetail.run(
          id,
          r.id,
          campaignId,
          text(du.id),
          text(du.email),
          text(scenario.id),
          text(scenario.name),
          text(obj(scenario.type).key),
          text(obj(detail.session).id),
          real(detail.score),
          json(detail.feedback),
          text(detail.created_at),
          text(detail.updated_at),
          toJson(detail),
        );
        this.insertEvals('score_detail', id, detail.eval_results, campaignId);
      }
    }
    return counts;
  }

  private insertEvals(parentType: string, parentId: string, evals: unknown, campaignId: string): void {
    if (!Array.isArray(evals)) return;
    for (const e of evals) {
      const ev = obj(e);
      const skill = obj(ev.skill);
      this.s.insertEval.run(
        parentType,
        parentId,
        text(ev.evaluation_id),
        text(skill.key),
        text(skill.label),
        real(ev.score),
        text(ev.score),
        text(ev.rationale),
        text(ev.evaluated_at),
        campaignId,
      );
    }
  }
}
