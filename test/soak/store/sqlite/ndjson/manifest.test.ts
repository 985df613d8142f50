/**
 * `<out>/_manifest.ndjson`: one line per commit that appended to the NDJSON files, committed with their
 * offsets. Every committed line's ranges and sha256 match the files' bytes, and the committed lines
 * tile each file from 0 to its committed length with no gap and no overlap, including after kill -9
 * at random instants (checked at every kill, before anything cuts the tails).
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prng } from '../../../../../src/simulator/random.js';
import { Database } from '../../../../../src/store/sqlite/driver.js';
import { cli, sim, startCli, tempDir } from '../../../../helpers/index.js';

const FILES = ['campaigns.ndjson', 'session_results.ndjson', 'role_results.ndjson'];

interface Range {
  file: string;
  start: number;
  end: number;
  lines: number;
  sha256: string;
}
interface ManifestLine {
  run_id: string;
  part: number;
  at: string;
  files: Range[];
}

/** What the database committed: each file's length. */
function committed(dbPath: string): Map<string, number> {
  const db = new Database(dbPath, { readonly: true });
  try {
    const rows = db.prepare('SELECT path, committed_bytes FROM ndjson_files').all() as Array<{ path: string; committed_bytes: number }>;
    return new Map(rows.map((r) => [r.path.slice(r.path.lastIndexOf('/') + 1), r.committed_bytes]));
  } finally {
    db.close();
  }
}

/**
 * Checks the manifest's committed lines against the files' committed bytes (tails past the committed
 * lengths, left by a kill, are ignored: the next run cuts them). Returns the lines.
 */
function verifyManifest(out: string, dbPath: string): ManifestLine[] {
  const ends = committed(dbPath);
  const manifestEnd = ends.get('_manifest.ndjson') ?? 0;
  const text = existsSync(join(out, '_manifest.ndjson'))
    ? readFileSync(join(out, '_manifest.ndjson')).subarray(0, manifestEnd).toString('utf8')
    : '';
  expect(text === '' || text.endsWith('\n')).toBe(true);
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ManifestLine);
  const reached = new Map<string, number>();
  for (const line of lines) {
    expect(line.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isNaN(Date.parse(line.at))).toBe(false);
    expect(line.files.length).toBeGreaterThan(0);
    for (const r of line.files) {
      expect(FILES).toContain(r.file);
      // Tiles: each range starts where the file's previous one ended (the first at 0).
      expect(r.start, `${r.file} in part ${line.part} of ${line.run_id}`).toBe(reached.get(r.file) ?? 0);
      expect(r.end).toBeGreaterThan(r.start);
      reached.set(r.file, r.end);
      const bytes = readFileSync(join(out, r.file)).subarray(r.start, r.end);
      expect(bytes.length).toBe(r.end - r.start);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(r.sha256);
      expect(bytes.toString('utf8').split('\n').length - 1).toBe(r.lines);
      expect(bytes[bytes.length - 1]).toBe(10);
    }
  }
  // No committed byte without its line: every file's committed length is where its ranges end.
  for (const file of FILES) expect(reached.get(file) ?? 0, file).toBe(ends.get(file) ?? 0);
  return lines;
}

/**
 * A simulator whose results grow by 5 a minute on a clock the test moves (`later()`), and an NDJSON
 * mirror of it: `pull(...extra)` runs one pass into `out`, with its state in `db`.
 */
async function growingMirror(campaigns: number, records: number) {
  let now = Date.UTC(2026, 10, 1);
  const s = await sim({ campaigns, records, growth: { count: 5, windowMs: 60_000 }, now: () => now });
  const dir = tempDir();
  const out = join(dir, 'out');
  const db = join(dir, 'state.db');
  const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
  return {
    out,
    db,
    pull: (...extra: string[]) => cli(['pull', '--db', db, '--out', out, ...extra], { env }),
    later: () => {
      now += 60_000;
    },
  };
}

describe('the NDJSON manifest', () => {
  it('records what each pass appended; a pass that appends nothing writes no line; growth starts a new run where the last ended', async () => {
    const m = await growingMirror(4, 40);
    const { out, db } = m;
    const pull = () => m.pull('--page-size', '10');
    expect((await pull()).code).toBe(0);
    expect((statSync(join(out, '_manifest.ndjson')).mode & 0o777).toString(8)).toBe('600');
    const first = verifyManifest(out, db);
    expect(new Set(first.map((l) => l.run_id)).size).toBe(1);
    expect(first.flatMap((l) => l.files).reduce((n, r) => n + (r.file === 'campaigns.ndjson' ? 0 : r.lines), 0)).toBe(160);

    const size = statSync(join(out, '_manifest.ndjson')).size;
    expect((await pull()).code).toBe(0);
    expect(statSync(join(out, '_manifest.ndjson')).size).toBe(size);

    m.later();
    expect((await pull()).code).toBe(0);
    const all = verifyManifest(out, db);
    const added = all.slice(first.length);
    expect(added.length).toBeGreaterThan(0);
    expect(new Set(added.map((l) => l.run_id)).size).toBe(1);
    expect(added[0]?.run_id).not.toBe(first[0]?.run_id);
    expect(added.flatMap((l) => l.files).reduce((n, r) => n + r.lines, 0)).toBe(20);
  });

  it('a torn manifest tail (a crash after its line was written, before the commit) is cut, and the data tails with it', async () => {
    const { out, db, pull, later } = await growingMirror(2, 10);
    expect((await pull()).code).toBe(0);
    // What a kill between the manifest's fsync and the commit leaves: an appended data line and its whole manifest line.
    appendFileSync(join(out, 'session_results.ndjson'), '{"id":"never-committed"}\n');
    appendFileSync(join(out, '_manifest.ndjson'), '{"run_id":"00000000-0000-0000-0000-000000000000","part":1,"at":"x","files":[]}\n{"run_');
    later();
    const r = await pull();
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(out, '_manifest.ndjson'), 'utf8')).not.toContain('00000000-0000');
    expect(readFileSync(join(out, 'session_results.ndjson'), 'utf8')).not.toContain('never-committed');
    verifyManifest(out, db);
  });

  it('a manifest its reader removed starts again, from where the files end', async () => {
    const { out, db, pull, later } = await growingMirror(2, 10);
    expect((await pull()).code).toBe(0);
    const before = committed(db);
    rmSync(join(out, '_manifest.ndjson'));
    later();
    const r = await pull();
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(join(out, '_manifest.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ManifestLine);
    const session = lines.flatMap((l) => l.files).find((f) => f.file === 'session_results.ndjson');
    expect(session?.start).toBe(before.get('session_results.ndjson'));
  });

  it('kill -9 at random instants: at every kill, each committed byte has its committed line; a finished folder tiles every file', async () => {
    const KILLS = Number(process.env.CRASH_KILLS ?? 10);
    // Slow replies stretch a run over several commits (the group commits every second), so kills land
    // before, between and after them, and in the middle of a commit's writes.
    const s = await sim({ campaigns: 4, records: 600, faults: { slow: 1 }, slowMs: 50 });
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const at = (n: number) => ({ out: join(dir, `out${n}`), db: join(dir, `state${n}.db`) });
    const finish = async (n: number) => {
      const { out, db } = at(n);
      const lines = verifyManifest(out, db);
      for (const file of FILES) expect(statSync(join(out, file)).size).toBe(committed(db).get(file));
      expect(statSync(join(out, '_manifest.ndjson')).size).toBe(committed(db).get('_manifest.ndjson'));
      const total = lines.flatMap((l) => l.files).reduce((sum, r) => sum + (r.file === 'campaigns.ndjson' ? 0 : r.lines), 0);
      expect(total).toBe(2400);
    };
    const random = prng(4242);
    let kills = 0;
    let verified = 0;
    let mirror = 0;
    // When a run finishes before its kill, its folder is checked whole and a fresh one is started.
    while (kills < KILLS) {
      const { out, db } = at(mirror);
      const run = startCli(['pull', '--db', db, '--out', out, '--page-size', '20'], { env });
      const delay = 300 + Math.floor(random() * 2000);
      const outcome = await Promise.race([run.exited.then(() => 'done' as const), new Promise((r) => setTimeout(() => r('kill'), delay))]);
      if (outcome === 'kill') run.child.kill('SIGKILL');
      const { code, signal } = await run.exited;
      if (signal === 'SIGKILL') {
        kills++;
        if (existsSync(db)) verified += verifyManifest(out, db).length > 0 ? 1 : 0;
      } else {
        expect(code, run.stderr()).toBe(0);
        await finish(mirror);
        mirror++;
      }
    }
    if (process.env.MANIFEST_DEBUG) console.log(`kills ${kills}, with committed lines ${verified}, mirrors ${mirror + 1}`);
    // Some kills found committed lines to check (not only kills before the first commit).
    expect(verified).toBeGreaterThan(0);
    const final = await cli(['pull', '--db', at(mirror).db, '--out', at(mirror).out], { env });
    expect(final.code, final.stderr).toBe(0);
    await finish(mirror);
  }, 300_000);
});
