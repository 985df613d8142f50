/**
 * forget finds a candidate wherever their e-mail or id is in a record: at its top, in a score detail
 * inside another candidate's result, by a numeric id, in an older line of a re-served record; the
 * records that only held them keep everything else.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { lineDigest } from '../../../src/store/sqlite/ndjson/digest-index.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

async function run(s: RunningSimulator, args: string[]) {
  return runCli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url } });
}

type Obj = Record<string, unknown>;
type User = { id: unknown; email: string };
const user = (r: Obj) => r.user as User;

/** Only nested in another's record: found nowhere at the top of one. */
const NESTED: User = { id: 'c0ffee00-0000-4000-8000-00000000000c', email: 'Nested.Only@Example.com' };
const NUMERIC: User = { id: 4242, email: 'numeric.id@example.com' };

function everyByte(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'))
    .join('\n');
}

const detailOf = (u: User, n: number) => ({ id: `nested-detail-${n}`, user: u, score: 1.5, feedback: null });

describe('forget finds a nested candidate', () => {
  it('NDJSON: in a score detail of another result (by e-mail, by id, by a numeric id), and in an older line with their old e-mail', async () => {
    const s = await sharedSim({ campaigns: 2, records: 30 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const out = join(dir, 'out');
    expect((await run(s, ['pull', '--db', db, '--format', 'ndjson', '--out', out])).code).toBe(0);
    const roleFile = join(out, 'role_results.ndjson');
    const sessionFile = join(out, 'session_results.ndjson');
    const roles = readFileSync(roleFile, 'utf8').split('\n').filter(Boolean);
    const sessions = readFileSync(sessionFile, 'utf8').split('\n').filter(Boolean);
    const a = JSON.parse(roles[2] as string) as Obj;
    const a2 = JSON.parse(roles[4] as string) as Obj;
    // B: a candidate with lines of their own (a session result), not A's.
    const bLine = sessions.findIndex((l) => {
      const u = user(JSON.parse(l));
      return u.id !== user(a).id && u.id !== user(a2).id;
    });
    const bRecord = JSON.parse(sessions[bLine] as string) as Obj;
    const b = user(bRecord);
    // A's result holds a score detail of B and one of a candidate found nowhere else; A2's, one of a numeric id.
    const aDetails = a.score_details as unknown[];
    const a2Details = a2.score_details as unknown[];
    roles[2] = JSON.stringify({ ...a, score_details: [detailOf(b, 1), ...aDetails, detailOf(NESTED, 2)] });
    roles[4] = JSON.stringify({ ...a2, score_details: [...a2Details, detailOf(NUMERIC, 3)] });
    // B's session result as served before their e-mail changed: an older line of the same record.
    const older = JSON.stringify({ ...bRecord, user: { ...b, email: 'b.before@example.com' }, updated_at: '2020-01-01T00:00:00Z' });
    sessions.splice(bLine, 0, older);
    const write = (file: string, lines: string[]) => {
      const text = `${lines.join('\n')}\n`;
      writeFileSync(file, text);
      return Buffer.byteLength(text);
    };
    const m = openDatabase(db);
    const commit = m.prepare('UPDATE ndjson_files SET committed_bytes = ? WHERE path = ?');
    commit.run(write(roleFile, roles), roleFile);
    commit.run(write(sessionFile, sessions), sessionFile);
    const setDigest = m.prepare('UPDATE ndjson_records SET digest = ? WHERE path = ? AND id = ?');
    setDigest.run(lineDigest(roles[2] as string), roleFile, a.id);
    setDigest.run(lineDigest(roles[4] as string), roleFile, a2.id);
    m.close();

    // By e-mail: B's own lines, their older line, and their detail in A's result.
    const byEmail = await run(s, ['forget', '--db', db, '--user', b.email, '--json']);
    expect(byEmail.code, byEmail.stderr).toBe(0);
    const doc = JSON.parse(byEmail.stdout);
    expect(doc.files.find((f: { path: string }) => f.path === roleFile).changed).toBe(1);
    for (const text of [b.email, String(b.id), 'b.before@example.com']) expect(everyByte(dir)).not.toContain(text);
    // A's line is kept, without B's detail, everything else as it was.
    const aNow = () =>
      readFileSync(roleFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Obj)
        .filter((r) => r.id === a.id);
    expect(aNow()).toEqual([{ ...a, score_details: [...aDetails, detailOf(NESTED, 2)] }]);

    // Found only nested, by id: erased, not "no record".
    const nested = await run(s, ['forget', '--db', db, '--user', NESTED.id as string]);
    expect(nested.code, nested.stderr).toBe(0);
    expect(nested.stdout).toMatch(/taken out of 1 other candidate's record/);
    expect(everyByte(dir).toLowerCase()).not.toContain(NESTED.email.toLowerCase());
    expect(aNow()).toEqual([a]);

    // A numeric id matches its text, as in SQLite.
    const numeric = await run(s, ['forget', '--db', db, '--user', '4242']);
    expect(numeric.code, numeric.stderr).toBe(0);
    expect(everyByte(dir)).not.toContain(NUMERIC.email);
    const a2Now = readFileSync(roleFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Obj)
      .filter((r) => r.id === a2.id);
    expect(a2Now).toEqual([a2]);

    // Nothing matched anywhere: the usual "no record".
    const none = await run(s, ['forget', '--db', db, '--user', NESTED.email]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no record of the candidate/);
    // The files are still the database's own.
    const next = await run(s, ['pull', '--db', db, '--json']);
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).records).toBe(0);
  });

  it("SQLite: a detail that could not be split out of a result's raw (no id) loses them; the result stays", async () => {
    const s = await sharedSim({ campaigns: 2, records: 20 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await run(s, ['pull', '--db', db])).code).toBe(0);
    const role = s.data.campaigns[1] as (typeof s.data.campaigns)[0];
    const a = s.data.roleResult(role, 3, 'DETAILED') as Obj;
    const details = a.score_details as Obj[];
    // Kept whole in raw: two details without an id, one of a candidate found nowhere else, one of a numeric id.
    const { id: _n, ...nestedDetail } = detailOf(NESTED, 1);
    const { id: _m, ...numericDetail } = detailOf(NUMERIC, 2);
    const m = openDatabase(db);
    m.prepare('UPDATE role_results SET raw = ? WHERE id = ?').run(
      JSON.stringify({ ...a, score_details: [...details, nestedDetail, numericDetail] }),
      a.id,
    );
    m.close();
    const bytes = () =>
      ['', '-wal']
        .map((x) => {
          try {
            return readFileSync(db + x).toString('latin1');
          } catch {
            return '';
          }
        })
        .join('');
    expect(bytes()).toContain(NESTED.email);

    const r = await run(s, ['forget', '--db', db, '--user', NESTED.email.toUpperCase(), '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).removed).toMatchObject({ role_results: 0, records_changed: 1 });
    expect(bytes()).not.toContain(NESTED.email);
    const numeric = await run(s, ['forget', '--db', db, '--user', '4242']);
    expect(numeric.code, numeric.stderr).toBe(0);
    expect(bytes()).not.toContain(NUMERIC.email);
    const after = openDatabase(db, { readonly: true });
    expect(JSON.parse(after.prepare('SELECT raw FROM role_results WHERE id = ?').pluck().get(a.id) as string)).toEqual(a);
    expect(after.prepare('SELECT count(*) FROM score_details WHERE role_result_id = ?').pluck().get(a.id)).toBe(details.length);
    after.close();
  });
});
