/**
 * `forget --user` in the PostgreSQL mirror (issue 17): one candidate's results, score details and
 * eval results deleted in one transaction, their streams' counts lowered, as store/erase.ts does in
 * SQLite. PostgreSQL keeps dead row versions until VACUUM: the deleted tables are vacuumed after the
 * commit (a plain VACUUM, which makes the space reusable; the server's WAL and backups are the
 * operator's to age out).
 */
import type { PgDatabase } from './database.js';

export interface PgErased {
  session_results: number;
  role_results: number;
  score_details: number;
  eval_results: number;
}

const MATCH = '(user_id = $1 OR lower(user_email) = lower($1))';

export async function eraseFromPg(db: PgDatabase, user: string): Promise<PgErased> {
  const erased = await db.transaction(async (c) => {
    const sessions = await c.query<{ id: string; campaign_id: string }>(
      `DELETE FROM session_results WHERE ${MATCH} RETURNING id, campaign_id`,
      [user],
    );
    const sessionIds = sessions.rows.map((r) => r.id);
    let evals =
      (await c.query("DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])", [sessionIds]))
        .rowCount ?? 0;
    const roles = await c.query<{ id: string; stream: string }>(
      `DELETE FROM role_results WHERE ${MATCH} RETURNING id, campaign_id || '/role/' || coalesce(report_type, '') AS stream`,
      [user],
    );
    const roleIds = roles.rows.map((r) => r.id);
    // Their score details, under their role results or (if any) under another record: theirs too.
    const details = await c.query<{ id: string }>(
      `DELETE FROM score_details WHERE role_result_id = ANY($2::text[]) OR ${MATCH} RETURNING id`,
      [user, roleIds],
    );
    evals +=
      (
        await c.query("DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id = ANY($1::text[])", [
          details.rows.map((r) => r.id),
        ])
      ).rowCount ?? 0;
    const streams = [...sessions.rows.map((r) => `${r.campaign_id}/session`), ...roles.rows.map((r) => r.stream)];
    for (const stream of streams) await c.query('UPDATE sync_state SET records = greatest(0, records - 1) WHERE stream = $1', [stream]);
    return { session_results: sessionIds.length, role_results: roleIds.length, score_details: details.rowCount ?? 0, eval_results: evals };
  });
  if (erased.session_results + erased.role_results + erased.score_details > 0) {
    await db.query('VACUUM session_results, role_results, score_details, eval_results', [], 'cannot vacuum');
  }
  return erased;
}

/** Every stream of the mirror (forget takes all their locks, so no pull writes the user back meanwhile). */
export async function allStreams(db: PgDatabase): Promise<string[]> {
  return (await db.query<{ stream: string }>('SELECT stream FROM sync_state')).rows.map((r) => r.stream);
}
