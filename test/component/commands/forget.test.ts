/**
 * `forget --user`: an erasure request leaves no trace of the candidate in the database
 * files (WAL included) or the NDJSON files, changes nothing else, and survives a crash mid-rewrite.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Waits } from '../../../src/core/waits.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

/** The SQLite busy timeout (core/waits.ts) of a forget that waits for a reader to let go. */
const BUSY_MS = 300;

async function run(s: RunningSimulator, args: string[], waits?: Partial<Waits>) {
  return runCli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url }, waits });
}

/** Every byte of the database's files. */
/** A simulator of 2 campaigns × 30 records, pulled into NDJSON files (`out`) with their state in `db`. */
async function ndjsonMirror() {
  const s = await sharedSim({ campaigns: 2, records: 30 });
  const dir = tempDir();
  const db = join(dir, 'm.db');
  const out = join(dir, 'out');
  expect((await run(s, ['pull', '--db', db, '--format', 'ndjson', '--out', out])).code).toBe(0);
  return { s, db, out };
}

function dbBytes(db: string): string {
  return ['', '-wal']
    .map((suffix) => {
      try {
        return readFileSync(db + suffix).toString('latin1');
      } catch {
        return '';
      }
    })
    .join('');
}

/** How many results of each kind the simulator serves for a candidate (candidates recur across results and campaigns). */
function resultsOf(s: RunningSimulator, records: number, match: (u: { id: string; email: string }) => boolean) {
  let session = 0;
  let role = 0;
  for (const c of s.data.campaigns) {
    for (let i = 0; i < records; i++) {
      if (c.type === 'SESSION_COMPLETION') session += match(s.data.sessionResult(c, i).user as { id: string; email: string }) ? 1 : 0;
      else role += match(s.data.roleResult(c, i, 'DETAILED').user as { id: string; email: string }) ? 1 : 0;
    }
  }
  return { session, role };
}

const count = (db: string, sql: string, ...args: unknown[]) => {
  const m = openDatabase(db);
  try {
    return m
      .prepare(sql)
      .pluck()
      .get(...args) as number;
  } finally {
    m.close();
  }
};

/**
 * The state of a forget killed (kill -9) between its DELETE's commit and the end of its VACUUM: a
 * process that erases the user's rows as forget does (the built store), then kills itself.
 */
function killedAfterDelete(db: string, user: string): void {
  // A copy of the e-mail in a page's free space, as earlier writes leave them (page splits and
  // updates while pulling, with secure_delete off): the DELETE does not reach it, only a VACUUM does.
  const m = openDatabase(db);
  m.pragma('secure_delete = OFF');
  m.prepare("INSERT INTO campaigns (id, raw) VALUES ('test-stale-copy', ?)").run(user);
  m.prepare("DELETE FROM campaigns WHERE id = 'test-stale-copy'").run();
  m.close();
  const dist = (path: string) => JSON.stringify(fileURLToPath(new URL(`../../../dist/store/${path}`, import.meta.url)));
  const script = `
    const { openDatabase } = await import(${dist('sqlite/db.js')});
    const { eraseFromMirror } = await import(${dist('sqlite/erase-rows.js')});
    const { beginErasure } = await import(${dist('sqlite/erasure-mark.js')});
    const { knownPerson } = await import(${dist('model/person.js')});
    const db = openDatabase(process.argv[1]);
    const person = knownPerson([process.argv[2]], [process.argv[2]]);
    db.transaction(() => {
      eraseFromMirror(db, { person });
      beginErasure(db, person);
    })();
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, db, user], { encoding: 'utf8' });
  expect(child.signal, child.stderr).toBe('SIGKILL');
}

/** One address in the spellings a service may send it: other cases, and decomposed (NFD) letters. */
const SPELLINGS = ['Zoë.Ünal@Example.com', 'ZOË.ÜNAL@EXAMPLE.COM', 'zoe\u0308.U\u0308nal@example.COM'];
/** How forget is asked: lower case, composed (NFC). */
const ASKED = 'zoë.ünal@example.com';

describe('forget --user', () => {
  it('erases a candidate from every table and from the bytes of the database files; others stay', async () => {
    const s = await sharedSim({ campaigns: 2, records: 50 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    const a = s.data.sessionResult(session, 7) as { id: string; user: { id: string; email: string } };
    const b = s.data.roleResult(role, 3, 'DETAILED') as { id: string; user: { id: string; email: string }; score_details: unknown[] };
    expect(dbBytes(db)).toContain(a.user.email);

    // By e-mail, in another case.
    const byEmail = await run(s, ['forget', '--db', db, '--user', a.user.email.toUpperCase(), '--json']);
    expect(byEmail.code, byEmail.stderr).toBe(0);
    const doc = JSON.parse(byEmail.stdout);
    const ofA = resultsOf(s, 50, (u) => u.email === a.user.email);
    const ofB = resultsOf(s, 50, (u) => u.id === b.user.id);
    expect(ofA.session).toBeGreaterThan(0);
    expect(doc.removed).toMatchObject({ session_results: ofA.session, role_results: ofA.role });
    expect(doc.removed.eval_results).toBeGreaterThan(0);
    // By id.
    const byId = await run(s, ['forget', '--db', db, '--user', b.user.id]);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stdout).toMatch(new RegExp(`Erased .*: ${ofB.session} session results, ${ofB.role} role results, \\d+ score details`));

    for (const text of [a.user.email, a.user.id, a.id, b.user.email, b.user.id, b.id]) expect(dbBytes(db)).not.toContain(text);
    expect(count(db, 'SELECT count(*) FROM session_results')).toBe(50 - ofA.session - ofB.session);
    expect(count(db, 'SELECT count(*) FROM role_results')).toBe(50 - ofA.role - ofB.role);
    expect(count(db, "SELECT count(*) FROM eval_results WHERE parent_type = 'session_result' AND parent_id = ?", a.id)).toBe(0);
    expect(count(db, 'SELECT count(*) FROM score_details WHERE role_result_id = ?', b.id)).toBe(0);
    expect(count(db, 'SELECT sum(records) FROM sync_state')).toBe(100 - ofA.session - ofA.role - ofB.session - ofB.role);
    expect(count(db, 'PRAGMA integrity_check')).toBe('ok' as unknown as number);

    // A user found nowhere is a usage error, not a silent success.
    const missing = await run(s, ['forget', '--db', db, '--user', a.user.email]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no record of the candidate/);
    expect((await run(s, ['forget', '--db', db])).code).toBe(2);
  });

  it("scrubs the candidate's e-mail and id from the streams' stored errors, which status and /healthz show; other texts stay", async () => {
    const s = await sharedSim({ campaigns: 2, records: 20 });
    const db = join(tempDir(), 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const [session, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    const a = s.data.sessionResult(session, 4) as { user: { id: string; email: string } };
    const other = s.data.roleResult(role, 2, 'DETAILED') as { user: { id: string; email: string } };
    expect(other.user.email).not.toBe(a.user.email);
    // What a service's 500 may say, stored as a stream's last error: forget must erase it there too, where strings(1) would find it.
    const m = openDatabase(db);
    const streams = m.prepare('SELECT stream FROM sync_state ORDER BY stream').pluck().all() as string[];
    const fail = m.prepare("UPDATE sync_state SET last_error = ?, last_error_at = '2026-11-25T10:00:00Z' WHERE stream = ?");
    fail.run(`GET /v1/x: 500 cannot score ${a.user.email.toUpperCase()} (user ${a.user.id}) (request_id rq-1)`, streams[0]);
    fail.run(`GET /v1/x: 500 cannot score ${other.user.email} (request_id rq-2)`, streams[1]);
    m.close();
    const r = await run(s, ['forget', '--db', db, '--user', a.user.email, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).removed.error_texts).toBe(1);
    const errors = openDatabase(db, { readonly: true });
    expect(errors.prepare('SELECT last_error FROM sync_state WHERE stream = ?').pluck().get(streams[0])).toBe(
      'GET /v1/x: 500 cannot score [erased] (user [erased]) (request_id rq-1)',
    );
    expect(errors.prepare('SELECT last_error FROM sync_state WHERE stream = ?').pluck().get(streams[1])).toBe(
      `GET /v1/x: 500 cannot score ${other.user.email} (request_id rq-2)`,
    );
    errors.close();
    expect(dbBytes(db).toLowerCase()).not.toContain(a.user.email.toLowerCase());
    const status = await run(s, ['status', '--db', db]);
    expect(status.stdout).toContain('cannot score [erased]');
    // A candidate named only in an error (their records never mirrored) is still erased from it, not "no record".
    const m2 = openDatabase(db);
    m2.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?').run('500 for ghost@example.com', streams[0]);
    m2.close();
    const ghost = await run(s, ['forget', '--db', db, '--user', 'Ghost@Example.com']);
    expect(ghost.code, ghost.stderr).toBe(0);
    expect(ghost.stdout).toMatch(
      /Erased Ghost@Example\.com: 0 session results, .*; their e-mail or id replaced by \[erased\] in 1 stored error text/,
    );
    expect(dbBytes(db)).not.toContain('ghost@example.com');
  });

  it('an NDJSON mirror: given the id, the e-mail goes from the stored errors too (and the other way round)', async () => {
    const { s, db } = await ndjsonMirror();
    const [, role] = s.data.campaigns as [(typeof s.data.campaigns)[0], (typeof s.data.campaigns)[0]];
    const a = s.data.roleResult(role, 5, 'DETAILED') as { user: { id: string; email: string } };
    const b = s.data.roleResult(role, 9, 'DETAILED') as { user: { id: string; email: string } };
    expect(b.user.id).not.toBe(a.user.id);
    const m = openDatabase(db);
    const streams = m.prepare('SELECT stream FROM sync_state ORDER BY stream').pluck().all() as string[];
    const fail = m.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?');
    fail.run(`500 boom for ${a.user.email} (user ${a.user.id})`, streams[0]);
    fail.run(`500 boom for ${b.user.email} (user ${b.user.id})`, streams[1]);
    m.close();
    // The tables of an NDJSON mirror are empty: the other identifier comes from the lines erased.
    expect((await run(s, ['forget', '--db', db, '--user', a.user.id])).code).toBe(0);
    expect((await run(s, ['forget', '--db', db, '--user', b.user.email])).code).toBe(0);
    const after = openDatabase(db, { readonly: true });
    expect(after.prepare('SELECT last_error FROM sync_state WHERE last_error IS NOT NULL ORDER BY stream').pluck().all()).toEqual([
      '500 boom for [erased] (user [erased])',
      '500 boom for [erased] (user [erased])',
    ]);
    after.close();
    for (const text of [a.user.email, a.user.id, b.user.email, b.user.id]) expect(dbBytes(db)).not.toContain(text);
  });

  it('rewrites the NDJSON files without their lines, nothing else changed, and the next pull goes on', async () => {
    const { s, db, out } = await ndjsonMirror();
    const file = join(out, 'role_results.ndjson');
    const before = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const victim = s.data.roleResult(s.data.campaigns[1]!, 12, 'DETAILED') as { id: string; user: { email: string } };
    const theirs = resultsOf(s, 30, (u) => u.email === victim.user.email);
    const r = await run(s, ['forget', '--db', db, '--user', victim.user.email, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).files).toEqual([
      ...(theirs.role > 0 ? [{ path: file, lines: theirs.role, changed: 0 }] : []),
      ...(theirs.session > 0 ? [{ path: join(out, 'session_results.ndjson'), lines: theirs.session, changed: 0 }] : []),
    ]);
    const after = readFileSync(file, 'utf8');
    expect(after).not.toContain(victim.user.email);
    expect(readFileSync(join(out, 'session_results.ndjson'), 'utf8')).not.toContain(victim.user.email);
    expect(after.split('\n').filter(Boolean)).toEqual(before.filter((l) => !l.includes(victim.user.email)));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(dbBytes(db)).not.toContain(victim.id);
    // The committed length follows the file: the next pull neither fails nor appends.
    const next = await run(s, ['pull', '--db', db, '--json']);
    expect(next.code, next.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(after);
  });

  it('a rewrite committed before a crash is finished by the next run, not cut', async () => {
    const s = await sharedSim({ campaigns: 2, records: 20 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const out = join(dir, 'out');
    expect((await run(s, ['pull', '--db', db, '--format', 'ndjson', '--out', out])).code).toBe(0);
    const file = join(out, 'session_results.ndjson');
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const kept = `${lines.slice(1).join('\n')}\n`;
    // The state of a forget killed between its commit and its rename.
    const temp = join(out, '.session_results.ndjson.forget-0123456789ab');
    writeFileSync(temp, kept, { mode: 0o600 });
    const m = openDatabase(db);
    m.prepare('UPDATE ndjson_files SET committed_bytes = ? WHERE path = ?').run(Buffer.byteLength(kept), file);
    m.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(`ndjson_rewrite:${file}`, temp);
    m.close();
    const next = await run(s, ['pull', '--db', db]);
    expect(next.code, next.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(kept);
    expect(() => statSync(temp)).toThrow();
  });
  it('a forget killed after its delete committed is finished by the next forget, even of the same user', async () => {
    const s = await sharedSim({ campaigns: 2, records: 50 });
    const db = join(tempDir(), 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const a = s.data.sessionResult(s.data.campaigns[0]!, 7) as { id: string; user: { id: string; email: string } };
    const b = s.data.roleResult(s.data.campaigns[1]!, 3, 'DETAILED') as { id: string; user: { id: string; email: string } };
    killedAfterDelete(db, a.user.email);
    expect(count(db, 'SELECT count(*) FROM session_results WHERE user_id = ?', a.user.id)).toBe(0);
    expect(dbBytes(db).includes(a.user.email)).toBe(true);

    // The same user again: no record left, but the earlier erasure is finished, not "no record".
    const same = await run(s, ['forget', '--db', db, '--user', a.user.email, '--json']);
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout)).toMatchObject({ removed: { session_results: 0, role_results: 0 }, finished_earlier: true });
    expect(dbBytes(db)).not.toContain(a.user.email);
    expect(count(db, 'PRAGMA integrity_check')).toBe('ok' as unknown as number);
    // Nothing is pending any more: a third run is the usual "no record".
    const third = await run(s, ['forget', '--db', db, '--user', a.user.email]);
    expect(third.code).toBe(2);
    expect(third.stderr).toMatch(/no record of the candidate/);

    // Another user finishes it too, and is erased as usual.
    killedAfterDelete(db, b.user.id);
    const c = String(count(db, 'SELECT user_id FROM session_results WHERE user_id NOT IN (?, ?) LIMIT 1', a.user.id, b.user.id));
    const other = await run(s, ['forget', '--db', db, '--user', c]);
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toMatch(/^Erased .* Also finished the erasure an earlier forget left unfinished there\.$/m);
    for (const text of [b.id, b.user.id, c]) expect(dbBytes(db).includes(text)).toBe(false);
  });

  it('a pull finishes an erasure a killed forget left unfinished before it syncs', async () => {
    const s = await sharedSim({ campaigns: 2, records: 50 });
    const db = join(tempDir(), 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const a = s.data.sessionResult(s.data.campaigns[0]!, 7) as { id: string; user: { id: string; email: string } };
    killedAfterDelete(db, a.user.email);
    expect(dbBytes(db).includes(a.user.email)).toBe(true);
    const next = await run(s, ['pull', '--db', db]);
    expect(next.code, next.stderr).toBe(0);
    expect(dbBytes(db).includes(a.user.email)).toBe(false);
    expect(count(db, "SELECT count(*) FROM meta WHERE key = 'erase_pending'")).toBe(0);
  });
  it('another process reading the database: forget waits, then exits 75 (a lock held) saying the erasure is unfinished; the next run finishes it', async () => {
    const s = await sharedSim({ campaigns: 2, records: 30 });
    const db = join(tempDir(), 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const a = s.data.sessionResult(s.data.campaigns[0]!, 4) as { id: string; user: { id: string; email: string } };
    // `sqlite3 m.db` with `BEGIN; SELECT count(*) FROM campaigns;`: its snapshot holds the old pages.
    const reader = openDatabase(db, { readonly: true });
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM campaigns').get();
    const started = Date.now();
    const held = await run(s, ['forget', '--db', db, '--user', a.user.email], { sqliteBusyMs: BUSY_MS });
    expect(Date.now() - started).toBeGreaterThanOrEqual(BUSY_MS);
    expect(held.code, held.stderr).toBe(75);
    expect(held.stdout).toBe('');
    expect(held.stderr.trim().split('\n')).toHaveLength(1);
    expect(held.stderr).toContain(db);
    expect(held.stderr).toMatch(/another process has it open \(a reader's transaction or a writer\) and did not let go within 300 ms,/);
    expect(held.stderr).toMatch(/rows are deleted but the erasure is not finished/);
    expect(held.stderr).toMatch(/run `campaign-sync forget` again/);
    for (const text of [a.user.id, a.id]) expect(held.stderr).not.toContain(text);
    expect(dbBytes(db).includes(a.user.email)).toBe(true);
    reader.exec('COMMIT');
    reader.close();

    const again = await run(s, ['forget', '--db', db, '--user', a.user.email, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ finished_earlier: true });
    for (const text of [a.user.email, a.user.id, a.id]) expect(dbBytes(db).includes(text)).toBe(false);
  });
  it('matches the e-mail ignoring case for all of Unicode, composed or not, in every table', async () => {
    const s = await sharedSim({ campaigns: 2, records: 40 });
    const db = join(tempDir(), 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    // The candidate with the most results; their rows get the address in every spelling.
    const m = openDatabase(db);
    const victim = m
      .prepare(
        'SELECT user_id FROM (SELECT user_id FROM session_results UNION ALL SELECT user_id FROM role_results) GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1',
      )
      .pluck()
      .get() as string;
    let n = 0;
    for (const t of ['session_results', 'role_results', 'score_details']) {
      for (const rowid of m.prepare(`SELECT rowid FROM ${t} WHERE user_id = ?`).pluck().all(victim) as number[])
        m.prepare(`UPDATE ${t} SET user_email = ? WHERE rowid = ?`).run(SPELLINGS[n++ % SPELLINGS.length], rowid);
    }
    m.close();
    expect(n).toBeGreaterThanOrEqual(SPELLINGS.length);
    const r = await run(s, ['forget', '--db', db, '--user', ASKED, '--json']);
    expect(r.code, r.stderr).toBe(0);
    for (const t of ['session_results', 'role_results', 'score_details'])
      expect(count(db, `SELECT count(*) FROM ${t} WHERE user_id = ?`, victim), t).toBe(0);
  });

  it('matches the e-mail ignoring case for all of Unicode in the NDJSON files', async () => {
    const { s, db, out } = await ndjsonMirror();
    const file = join(out, 'session_results.ndjson');
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    // The first lines become one candidate's results, their address spelled apart.
    const spelled = lines.map((l, i) => {
      const spelling = SPELLINGS[i];
      if (spelling === undefined) return l;
      const user = (JSON.parse(l) as { user: { id: string; email: string } }).user;
      return l.replace(`"${user.email}"`, JSON.stringify(spelling)).replace(`"${user.id}"`, '"zoe-unal-id"');
    });
    const n = SPELLINGS.length;
    const text = `${spelled.join('\n')}\n`;
    writeFileSync(file, text);
    const m = openDatabase(db);
    m.prepare('UPDATE ndjson_files SET committed_bytes = ? WHERE path = ?').run(Buffer.byteLength(text), file);
    m.close();
    const r = await run(s, ['forget', '--db', db, '--user', ASKED, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).files).toEqual([{ path: file, lines: n, changed: 0 }]);
    const after = readFileSync(file, 'utf8');
    for (const spelling of SPELLINGS) expect(after).not.toContain(JSON.stringify(spelling).slice(1, -1));
    expect(after).toBe(`${spelled.slice(n).join('\n')}\n`);
  });
});
