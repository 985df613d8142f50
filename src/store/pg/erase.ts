/**
 * `forget --user` in the PostgreSQL mirror (issue 17): one candidate's results, score details and
 * eval results deleted in one transaction, their streams' counts lowered, as store/erase.ts does in
 * SQLite. PostgreSQL keeps dead row versions until VACUUM: the deleted tables are vacuumed after the
 * commit (a plain VACUUM, which makes the space reusable; the server's WAL and backups are the
 * operator's to age out).
 */
import type pg from 'pg';
import { type ErasedCounts, emailKey, errorsWithout, type Identity, identities, type StoredError } from '../../core/email.js';
import type { PgDatabase } from './database.js';

/** The user's rows: $1 the id, $2 every stored spelling of their e-mail (`spellingsOf`). */
const MATCH = '(user_id = $1 OR user_email = ANY($2::text[]))';

/**
 * The stored e-mails that are the user's ignoring case (core/email.ts). Compared here, not with the
 * server's lower(): that one follows the database's locale (ASCII only under C, the locale of many
 * servers) and does not normalise, so the same address would match in SQLite and not here. Reads the
 * distinct e-mails once, about one per candidate: forget is rare, and the old query scanned them too.
 */
async function spellingsOf(c: pg.PoolClient, user: string): Promise<string[]> {
  const key = emailKey(user);
  const all = await c.query<{ user_email: string }>(
    ['session_results', 'role_results', 'score_details']
      .map((t) => `SELECT user_email FROM ${t} WHERE user_email IS NOT NULL`)
      .join(' UNION '),
  );
  return all.rows.map((r) => r.user_email).filter((e) => emailKey(e) === key);
}

export async function eraseFromPg(db: PgDatabase, user: string): Promise<ErasedCounts> {
  const erased = await db.transaction(async (c) => {
    const spellings = await spellingsOf(c, user);
    const sessions = await c.query<Identity & { id: string; campaign_id: string }>(
      `DELETE FROM session_results WHERE ${MATCH} RETURNING id, campaign_id, user_id, user_email`,
      [user, spellings],
    );
    const sessionIds = sessions.rows.map((r) => r.id);
    let evals =
      (await c.query("DELETE FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ANY($1::text[])", [sessionIds]))
        .rowCount ?? 0;
    const roles = await c.query<Identity & { id: string; stream: string }>(
      `DELETE FROM role_results WHERE ${MATCH} RETURNING id, campaign_id || '/role/' || coalesce(report_type, '') AS stream, user_id, user_email`,
      [user, spellings],
    );
    const roleIds = roles.rows.map((r) => r.id);
    // Their score details, under their role results or (if any) under another record: theirs too.
    const details = await c.query<Identity & { id: string }>(
      `DELETE FROM score_details WHERE role_result_id = ANY($3::text[]) OR ${MATCH} RETURNING id, user_id, user_email`,
      [user, spellings, roleIds],
    );
    evals +=
      (
        await c.query("DELETE FROM eval_results WHERE parent_type = 'score_detail' AND parent_id = ANY($1::text[])", [
          details.rows.map((r) => r.id),
        ])
      ).rowCount ?? 0;
    const streams = [...sessions.rows.map((r) => `${r.campaign_id}/session`), ...roles.rows.map((r) => r.stream)];
    for (const stream of streams) await c.query('UPDATE sync_state SET records = greatest(0, records - 1) WHERE stream = $1', [stream]);
    // A service's error message may quote the candidate; status and /healthz show the stored text.
    const terms = [user, ...identities([...sessions.rows, ...roles.rows, ...details.rows])];
    let errorTexts = 0;
    const stored = await c.query<StoredError>('SELECT stream, last_error FROM sync_state WHERE last_error IS NOT NULL');
    for (const row of errorsWithout(stored.rows, terms)) {
      errorTexts += (await c.query('UPDATE sync_state SET last_error = $1 WHERE stream = $2', [row.last_error, row.stream])).rowCount ?? 0;
    }
    return {
      session_results: sessionIds.length,
      role_results: roleIds.length,
      score_details: details.rowCount ?? 0,
      eval_results: evals,
      error_texts: errorTexts,
    };
  });
  if (erased.session_results + erased.role_results + erased.score_details + erased.error_texts > 0) {
    await db.query('VACUUM session_results, role_results, score_details, eval_results, sync_state', [], 'cannot vacuum');
  }
  return erased;
}

/** Every stream of the mirror (forget takes all their locks, so no pull writes the user back meanwhile). */
export async function allStreams(db: PgDatabase): Promise<string[]> {
  return (await db.query<{ stream: string }>('SELECT stream FROM sync_state')).rows.map((r) => r.stream);
}
