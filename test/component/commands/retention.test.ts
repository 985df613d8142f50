/**
 * Retention: `forget --older-than` erases the results dated before the cut from every byte of the
 * database's files and of the NDJSON files, as `forget --user` erases a candidate, and keeps the
 * younger ones as they were; an erasure stopped half-way is finished by the next pull; the
 * checkpoints stay past the erased records; a `--retention` pull stores nothing older than its cut,
 * and a watch applies the retention at most once a day, counted from the time kept in the database.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/core/clock.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { eraseFromMirror } from '../../../src/store/sqlite/erase-rows.js';
import { eraseOlderThan } from '../../../src/store/sqlite/erasure.js';
import { beginErasure } from '../../../src/store/sqlite/erasure-mark.js';
import { fakeClock } from '../../helpers/clock.js';
import { cutOf, type ServedResult, servedResults } from '../../helpers/history.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const RECORDS = 30;

async function run(s: RunningSimulator, args: string[], clock?: Clock) {
  return runCli(args, { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url }, clock });
}

type Served = ServedResult;

/**
 * cutOf the served history, with the candidates who have no young result: nothing of theirs may be
 * left once the old results go.
 */
function cutWithCandidates(records: Served[]) {
  const cut = cutOf(records);
  const youngEmails = new Set(cut.young.map((r) => r.email.toLowerCase()));
  const youngUsers = new Set(cut.young.map((r) => r.userId));
  return { ...cut, onlyOld: cut.old.filter((r) => !youngEmails.has(r.email.toLowerCase()) && !youngUsers.has(r.userId)) };
}

/** Every byte of every file under `dir` (the database, its -wal and -shm, the NDJSON files, any temporary file). */
function everyByte(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'))
    .join('\n');
}

function expectGone(dir: string, cut: ReturnType<typeof cutWithCandidates>) {
  const bytes = everyByte(dir);
  for (const r of cut.old) {
    expect(bytes.includes(r.id), r.id).toBe(false);
    for (const d of r.details) expect(bytes.includes(d), d).toBe(false);
  }
  for (const r of cut.onlyOld) {
    expect(bytes.includes(r.email), r.email).toBe(false);
    expect(bytes.includes(r.userId), r.userId).toBe(false);
  }
  for (const r of cut.young) expect(bytes.includes(r.id), r.id).toBe(true);
}

/** The stored results as they are: each row's text (SQLite), or each file's lines (NDJSON). */
function stored(kind: 'sqlite' | 'ndjson', db: string, out: string): Map<string, string> {
  const rows = new Map<string, string>();
  if (kind === 'ndjson') {
    for (const name of readdirSync(out).filter((n) => n.endsWith('.ndjson') && n !== 'campaigns.ndjson' && !n.startsWith('_'))) {
      const lines = readFileSync(join(out, name), 'utf8').split('\n').filter(Boolean);
      for (const line of lines) rows.set(`${name}:${(JSON.parse(line) as { id: string }).id}`, line);
    }
    return rows;
  }
  const m = openDatabase(db, { readonly: true });
  try {
    for (const t of ['session_results', 'role_results', 'score_details']) {
      for (const r of m.prepare(`SELECT * FROM ${t} ORDER BY id`).all() as Array<{ id: string }>)
        rows.set(`${t}:${r.id}`, JSON.stringify(r));
    }
  } finally {
    m.close();
  }
  return rows;
}

const pending = (db: string) => {
  const m = openDatabase(db, { readonly: true });
  try {
    return m.prepare("SELECT count(*) FROM meta WHERE key = 'erase_pending' OR key LIKE 'ndjson_rewrite:%'").pluck().get();
  } finally {
    m.close();
  }
};

async function mirror(kind: 'sqlite' | 'ndjson') {
  const s = await sim({ campaigns: 2, records: RECORDS });
  const dir = tempDir();
  const db = join(dir, 'm.db');
  const out = join(dir, 'out');
  const pulled = await run(s, ['pull', '--db', db, ...(kind === 'ndjson' ? ['--format', 'ndjson', '--out', out] : [])]);
  expect(pulled.code, pulled.stderr).toBe(0);
  return { s, dir, db, out, cut: cutWithCandidates(servedResults(s, RECORDS)) };
}

describe.each(['sqlite', 'ndjson'] as const)('forget --older-than (%s)', (kind) => {
  it('erases the older results from every byte of the files; the younger stay as they were; the next pull brings none back', async () => {
    const { s, dir, db, out, cut } = await mirror(kind);
    expect(cut.old.length).toBeGreaterThan(5);
    expect(cut.onlyOld.length).toBeGreaterThan(0);
    const before = stored(kind, db, out);
    const r = await run(s, ['forget', '--db', db, '--older-than', cut.duration(), '--json', '--yes']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      before: string;
      removed: { session_results: number; role_results: number };
      files: Array<{ lines: number }>;
    };
    expect(Math.abs(Date.parse(doc.before) - cut.at)).toBeLessThan(600_000);
    if (kind === 'sqlite') expect(doc.removed.session_results + doc.removed.role_results).toBe(cut.old.length);
    else expect(doc.files.reduce((n, f) => n + f.lines, 0)).toBe(cut.old.length);
    expectGone(dir, cut);
    expect(pending(db)).toBe(0);
    // The younger results are byte for byte what they were.
    const oldIds = new Set(cut.old.flatMap((o) => [o.id, ...o.details]));
    const kept = new Map(
      [...before].filter(
        ([key, text]) => !oldIds.has(key.slice(key.indexOf(':') + 1)) && !cut.old.some((o) => text.includes(`"role_result_id":"${o.id}"`)),
      ),
    );
    expect(stored(kind, db, out)).toEqual(kept);
    // The checkpoints stay past the erased records: the next pull reads nothing new and stores nothing old.
    const next = await run(s, ['pull', '--db', db, '--json']);
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).records).toBe(0);
    expectGone(dir, cut);
    // A text summary says what went.
    const again = await run(s, ['forget', '--db', db, '--older-than', cut.duration(), '--yes']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^Erased the results dated before \S+: 0 session results, 0 role results/);
  });

  it('an erasure stopped half-way is finished by the next pull', async () => {
    const { s, dir, db, cut } = await mirror(kind);
    const m = openDatabase(db);
    try {
      if (kind === 'ndjson') {
        // A full disk right after the first file's rename: the other file still holds them.
        const full = () => {
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        };
        expect(() => eraseOlderThan(m, cut.at, { afterRename: full })).toThrow(/no space/);
      } else {
        // Killed once the deletion committed, before the rebuild: the rows' bytes are still in the file.
        m.transaction(() => {
          eraseFromMirror(m, { before: cut.at });
          beginErasure(m, undefined, cut.at);
        })();
      }
    } finally {
      m.close();
    }
    expect(pending(db)).toBeGreaterThan(0);
    expect(cut.old.some((r) => everyByte(dir).includes(r.id))).toBe(true);
    const next = await run(s, ['pull', '--db', db, '--json']);
    expect(next.code, next.stderr).toBe(0);
    expectGone(dir, cut);
    expect(pending(db)).toBe(0);
  });

  it('pull --full --retention stores nothing older than the cut; without it --full brings them back', async () => {
    const { s, dir, db, cut } = await mirror(kind);
    expect((await run(s, ['forget', '--db', db, '--older-than', cut.duration(), '--yes'])).code).toBe(0);
    const full = await run(s, ['pull', '--db', db, '--full', '--retention', cut.duration(), '--json']);
    expect(full.code, full.stderr).toBe(0);
    expectGone(dir, cut);
    const back = await run(s, ['pull', '--db', db, '--full']);
    expect(back.code, back.stderr).toBe(0);
    expect(cut.old.every((r) => everyByte(dir).includes(r.id))).toBe(true);
  });
});

describe("a retention's cut is the run's clock's", () => {
  it('pull --full --retention on a clock set past the first younger result stores none before the cut it makes', async () => {
    const { s, cut } = await mirror('sqlite');
    const young = [...cut.young].sort((a, b) => a.created - b.created);
    const first = young[0] as Served;
    const last = young.at(-1) as Served;
    expect(last.created - first.created).toBeGreaterThan(600_000);
    const retention = cut.duration();
    const pullInto = async (clock?: Clock) => {
      const dir = tempDir();
      const r = await run(s, ['pull', '--db', join(dir, 'm.db'), '--full', '--retention', retention], clock);
      expect(r.code, r.stderr).toBe(0);
      return everyByte(dir);
    };
    // The real clock: the cut falls in the gap, the first younger result is stored.
    expect((await pullInto()).includes(first.id)).toBe(true);
    // A clock a minute past it: the same retention cuts it too; the last is still stored.
    const bytes = await pullInto(fakeClock(Date.now() + (first.created - cut.at) + 60_000));
    expect(bytes.includes(first.id)).toBe(false);
    expect(bytes.includes(last.id)).toBe(true);
  });

  it("forget --older-than cuts at the run clock's now less the duration", async () => {
    const { s, db, cut } = await mirror('sqlite');
    // A clock a day past the newest result: a day's cut leaves nothing younger, and says where it cut.
    const newest = Math.max(...servedResults(s, RECORDS).map((r) => r.created));
    const at = newest + 86_400_000 + 1000;
    const r = await run(s, ['forget', '--db', db, '--older-than', '1d', '--json', '--yes'], fakeClock(at));
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { before: string; removed: { session_results: number; role_results: number } };
    expect(doc.before).toBe(new Date(at - 86_400_000).toISOString());
    expect(doc.removed.session_results + doc.removed.role_results).toBe(cut.old.length + cut.young.length);
  });
});

describe('forget --older-than and the copies (versions, quarantine)', () => {
  it('erases the past versions and quarantined copies dated before the cut, and keeps the younger ones', async () => {
    const { s, db, cut } = await mirror('sqlite');
    const old = cut.old[0] as Served;
    const young = cut.young[0] as Served;
    const iso = (ms: number) => new Date(ms).toISOString();
    const early = iso(cut.at - 86_400_000);
    const late = iso(cut.at + 86_400_000);
    const m = openDatabase(db);
    try {
      const version = m.prepare(
        "INSERT INTO past_versions (kind, id, version, raw, valid_from, valid_to) VALUES ('session', ?, 1, ?, ?, ?)",
      );
      // Dated by its text: an old record's version goes, a young record's stays whatever its valid_from.
      version.run(old.id, JSON.stringify({ id: old.id, created_at: iso(old.created) }), late, late);
      version.run(young.id, JSON.stringify({ id: young.id, created_at: iso(young.created) }), early, early);
      const held = m.prepare(
        `INSERT INTO quarantine (stream, campaign_id, endpoint, record_id, raw, digest, reason, page_position, quarantined_at)
         VALUES ('c/session', 'c', 'results', NULL, ?, ?, 'bad', 0, ?)`,
      );
      // Text that does not parse: dated by when it was quarantined.
      held.run('{not json old', 'd1', early);
      held.run('{not json young', 'd2', late);
      // A parseable one dated before the cut goes, whenever it was quarantined.
      held.run(JSON.stringify({ created_at: iso(old.created) }), 'd3', late);
    } finally {
      m.close();
    }
    const r = await run(s, ['forget', '--db', db, '--older-than', cut.duration(), '--json', '--yes']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { removed: { result_versions: number; quarantined: number }; copies: Record<string, number> };
    expect(doc.removed.result_versions).toBe(1);
    expect(doc.removed.quarantined).toBe(2);
    expect(doc.copies).toEqual({ past_versions: 1, quarantine: 2 });
    const after = openDatabase(db, { readonly: true });
    try {
      expect(after.prepare('SELECT id FROM past_versions').pluck().all()).toEqual([young.id]);
      expect(after.prepare('SELECT raw FROM quarantine').pluck().all()).toEqual(['{not json young']);
    } finally {
      after.close();
    }
  });
});

describe('watch --retention', () => {
  const ranAt = (db: string) => {
    const m = openDatabase(db, { readonly: true });
    try {
      return m.prepare("SELECT value FROM meta WHERE key = 'retention_ran_at'").pluck().get() as string | undefined;
    } finally {
      m.close();
    }
  };
  const setRanAt = (db: string, at: number) => {
    const m = openDatabase(db);
    try {
      m.prepare("INSERT INTO meta (key, value) VALUES ('retention_ran_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(
        new Date(at).toISOString(),
      );
    } finally {
      m.close();
    }
  };
  const retentionLines = (stdout: string) =>
    stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { retention?: { removed: { session_results: number; role_results: number } } })
      .filter((d) => d.retention !== undefined);

  it('applies it at start and then at most once a day, counted from the time the database keeps', async () => {
    const { s, dir, db, cut } = await mirror('sqlite');
    const watch = () => run(s, ['watch', '--db', db, '--retention', cut.duration(), '--max-cycles', '3', '--interval', '1ms', '--json']);
    // Never ran: at start, once in three passes.
    const first = await watch();
    expect(first.code, first.stderr).toBe(0);
    const lines = retentionLines(first.stdout);
    expect(lines).toHaveLength(1);
    expect((lines[0]?.retention?.removed.session_results ?? 0) + (lines[0]?.retention?.removed.role_results ?? 0)).toBe(cut.old.length);
    expectGone(dir, cut);
    const at = ranAt(db);
    expect(at).toBeDefined();
    // The old records back (a --full without a retention); a watch restarted within the day leaves them.
    expect((await run(s, ['pull', '--db', db, '--full'])).code).toBe(0);
    const second = await watch();
    expect(second.code, second.stderr).toBe(0);
    expect(retentionLines(second.stdout)).toHaveLength(0);
    expect(ranAt(db)).toBe(at);
    expect(cut.old.every((r) => everyByte(dir).includes(r.id))).toBe(true);
    // A day later (the time it last ran, a day back): applied once more, at once.
    setRanAt(db, Date.now() - 86_400_000 - 1000);
    const third = await watch();
    expect(third.code, third.stderr).toBe(0);
    expect(retentionLines(third.stdout)).toHaveLength(1);
    expectGone(dir, cut);
    expect(Date.parse(ranAt(db) as string)).toBeGreaterThan(Date.now() - 600_000);
  });

  it('between passes, once the day has passed since it last ran', async () => {
    const { s, dir, db, cut } = await mirror('sqlite');
    // Due 5 minutes after the watch starts: the first pass runs without it, the second (10 minutes
    // later on the run's clock, which waits for nothing) after it, and the third not again.
    const start = Date.now();
    const clock = fakeClock(start);
    setRanAt(db, start - 86_400_000 + 300_000);
    const r = await run(s, ['watch', '--db', db, '--retention', cut.duration(), '--max-cycles', '3', '--interval', '10m', '--json'], clock);
    expect(r.code, r.stderr).toBe(0);
    expect(retentionLines(r.stdout)).toHaveLength(1);
    expectGone(dir, cut);
    // Run at the second pass, by the run's clock: not by the real one.
    expect(Date.parse(ranAt(db) as string)).toBeGreaterThanOrEqual(start + 600_000);
    expect(Date.parse(ranAt(db) as string)).toBeLessThan(start + 1_200_000);
  });
});

describe("a profile's retention", () => {
  it('is applied by a pull as --retention is, and a bad one names the file and key (exit 2)', async () => {
    const { s, dir, db, cut } = await mirror('sqlite');
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, `[profiles.gdpr]\nretention = "${cut.duration()}"\n`);
    const r = await run(s, ['pull', '--db', db, '--config', config, '--profile', 'gdpr', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { retention?: { removed: { session_results: number; role_results: number } } };
    expect((doc.retention?.removed.session_results ?? 0) + (doc.retention?.removed.role_results ?? 0)).toBe(cut.old.length);
    expectGone(dir, cut);
    writeFileSync(config, '[profiles.gdpr]\nretention = "0d"\n');
    const bad = await run(s, ['watch', '--db', db, '--config', config, '--profile', 'gdpr']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/campaign-sync\.toml: profiles\.gdpr\.retention: "0d" must be more than zero/);
  });
});

describe('bad --older-than and --retention', () => {
  it.each([
    [['forget', '--older-than', '0d'], /--older-than: "0d" must be more than zero/],
    [['forget', '--older-than', '-3d'], /--older-than: "-3d" is not a duration/],
    [['forget', '--older-than', 'soon'], /--older-than: "soon" is not a duration/],
    [['forget', '--older-than', '30'], /--older-than: "30" needs a unit/],
    [['forget', '--older-than', '30d', '--user', 'a@example.com'], /give --user or --older-than, not both/],
    [['pull', '--retention', '0s'], /--retention: "0s" must be more than zero/],
    [['watch', '--retention', 'bogus'], /--retention: "bogus" is not a duration/],
  ])('%j: exit 2, one line', async (args, message) => {
    const db = join(tempDir(), 'm.db');
    const r = await runCli([...args, '--db', db], { env: { CAMPAIGN_SYNC_API_KEY: 'k', CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9' } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
