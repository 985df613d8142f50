import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestBudget } from '../src/api/budget.js';
import { ApiClient } from '../src/api/client.js';
import { exitCodeForPass } from '../src/errors.js';
import type { RunningSimulator } from '../src/simulator/server.js';
import { Checkpoints } from '../src/store/checkpoints.js';
import { openDatabase } from '../src/store/db.js';
import { NdjsonStateError } from '../src/store/ndjson-file.js';
import { NdjsonSink } from '../src/store/sinks/ndjson.js';
import { runPass } from '../src/sync/pass.js';
import { cli, clientConfig, servedRecords, sim, tempDir } from './helpers/index.js';
import { passDefaults } from './helpers/mock.js';

async function pullNdjson(s: RunningSimulator, dbPath: string, out: string, pageSize = 100) {
  const db = openDatabase(dbPath);
  const state = new Checkpoints(db);
  const sink = new NdjsonSink(db, state, out);
  const client = new ApiClient(clientConfig(s), { budget: new RequestBudget({ count: 100_000, windowMs: 1000 }) });
  try {
    return await runPass({ client, sink, state }, { ...passDefaults, pageSize });
  } finally {
    await sink.close();
    await client.close();
    db.close();
  }
}

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);

/** What the simulator serves for every record, as text, keyed by id. */

describe('NDJSON output', () => {
  let saved: number | undefined;
  afterEach(() => {
    if (saved !== undefined) process.umask(saved);
    saved = undefined;
  });

  it('writes one line per record exactly as served, int64 digits exact, files 0600', async () => {
    saved = process.umask(0o022);
    const s = await sim({ campaigns: 4, records: 120, orderIndexStart: 2n ** 62n });
    const dir = tempDir();
    const out = join(dir, 'out');
    const result = await pullNdjson(s, join(dir, 'state.db'), out, 35);
    expect(exitCodeForPass(result)).toBe(0);
    const expected = servedRecords(s, 120);
    const got = [...lines(join(out, 'session_results.ndjson')), ...lines(join(out, 'role_results.ndjson'))];
    expect(got.length).toBe(480);
    for (const line of got) {
      const id = /"id":"([^"]+)"/.exec(line)?.[1] as string;
      expect(line).toBe(expected.get(id));
    }
    expect(got.join('\n')).toMatch(/"order_index":46116860184273\d{5}/);
    expect(lines(join(out, 'campaigns.ndjson')).length).toBe(4);
    for (const f of ['campaigns.ndjson', 'session_results.ndjson', 'role_results.ndjson']) {
      expect((statSync(join(out, f)).mode & 0o777).toString(8)).toBe('600');
    }
    // Records do not go into the SQLite tables with --format ndjson; the state does.
    const db = openDatabase(join(dir, 'state.db'));
    expect(db.prepare('SELECT count(*) FROM session_results').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM ndjson_files').pluck().get()).toBe(3);
    db.close();
  });

  it('a second pull appends nothing', async () => {
    const s = await sim({ campaigns: 2, records: 50 });
    const dir = tempDir();
    const out = join(dir, 'out');
    await pullNdjson(s, join(dir, 'state.db'), out);
    const sizes = ['campaigns', 'session_results', 'role_results'].map((f) => statSync(join(out, `${f}.ndjson`)).size);
    const again = await pullNdjson(s, join(dir, 'state.db'), out);
    expect(again.records).toBe(0);
    expect(['campaigns', 'session_results', 'role_results'].map((f) => statSync(join(out, `${f}.ndjson`)).size)).toEqual(sizes);
  });

  it('cuts a partial tail left by a crash before appending', async () => {
    let now = Date.UTC(2026, 10, 1);
    const s = await sim({ campaigns: 2, records: 30, growth: { count: 5, windowMs: 60_000 }, now: () => now });
    const dir = tempDir();
    const out = join(dir, 'out');
    await pullNdjson(s, join(dir, 'state.db'), out);
    const file = join(out, 'session_results.ndjson');
    // A crash between the write and the commit of the next page leaves uncommitted bytes.
    appendFileSync(file, '{"id":"half-written","score":3.');
    now += 60_000;
    await pullNdjson(s, join(dir, 'state.db'), out);
    const got = lines(file);
    expect(got.length).toBe(35);
    expect(readFileSync(file, 'utf8')).not.toContain('half-written');
    expect(new Set(got.map((l) => JSON.parse(l).id)).size).toBe(35);
    for (const l of got) JSON.parse(l);
  });

  it('a file shorter than its committed length is an error that changes nothing', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const dir = tempDir();
    const out = join(dir, 'out');
    await pullNdjson(s, join(dir, 'state.db'), out);
    const file = join(out, 'role_results.ndjson');
    truncateSync(file, 100);
    const db = openDatabase(join(dir, 'state.db'));
    expect(() => new NdjsonSink(db, new Checkpoints(db), out)).toThrow(NdjsonStateError);
    db.close();
    expect(statSync(file).size).toBe(100);
    const run = await cli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'state.db')], {
      env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/role_results\.ndjson holds 100 bytes but \d+ were committed/);
    expect(statSync(file).size).toBe(100);
  });
});

describe('checkpoints belong to one destination', () => {
  it('refuses to feed another format or folder from the same checkpoints, until a reset', async () => {
    const s = await sim({ campaigns: 2, records: 15 });
    const dir = tempDir();
    const db = join(dir, 'state.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    expect((await cli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'a')], { env })).code).toBe(0);
    // Without --format/--out the database keeps feeding its folder.
    const again = await cli(['pull', '--db', db, '--json'], { env });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).records).toBe(0);
    const sqlite = await cli(['pull', '--db', db, '--format', 'sqlite'], { env });
    expect(sqlite.code).toBe(2);
    expect(sqlite.stderr).toContain(`checkpoints are for --format ndjson --out ${join(dir, 'a')}, not --format sqlite`);
    const other = await cli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'b')], { env });
    expect(other.code).toBe(2);
    expect((await cli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'a')], { env })).code).toBe(0);
    expect((await cli(['reset', '--all', '--db', db])).code).toBe(0);
    const moved = await cli(['pull', '--db', db, '--format', 'sqlite', '--json'], { env });
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout).records).toBe(30);
  });
});

describe('an NDJSON file is cut back only to what this database committed (issue 10, items 2 and 3)', () => {
  const env = (s: RunningSimulator) => ({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey });

  it('a second database pointed at a folder another one filled is refused (exit 2) and changes nothing', async () => {
    const s = await sim({ campaigns: 2, records: 150 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const a = await cli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'a.db')], { env: env(s) });
    expect(a.code, a.stderr).toBe(0);
    const before = ['campaigns', 'session_results', 'role_results'].map((f) => readFileSync(join(out, `${f}.ndjson`), 'utf8'));
    expect(lines(join(out, 'role_results.ndjson')).length).toBe(150);
    const b = await cli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'b.db')], { env: env(s) });
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/\.ndjson already holds \d+ bytes that this database did not write; nothing was written/);
    expect(b.stderr).toContain('another --out');
    expect(b.stderr.trim().split('\n')).toHaveLength(1);
    expect(['campaigns', 'session_results', 'role_results'].map((f) => readFileSync(join(out, `${f}.ndjson`), 'utf8'))).toEqual(before);
  });

  it('a symlink in --out is refused (exit 2): the file it points to keeps its content and mode', async () => {
    const s = await sim({ campaigns: 2, records: 20 });
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const victim = join(dir, 'notes.txt');
    writeFileSync(victim, 'my own notes\n', { mode: 0o644 });
    chmodSync(victim, 0o644);
    symlinkSync(victim, join(out, 'role_results.ndjson'));
    const run = await cli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 's.db')], { env: env(s) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/role_results\.ndjson is a symbolic link; campaign-sync does not follow links/);
    expect(readFileSync(victim, 'utf8')).toBe('my own notes\n');
    expect(statSync(victim).mode & 0o777).toBe(0o644);
    // An empty file the database never wrote is taken; a dangling link is refused all the same.
    rmSync(join(out, 'role_results.ndjson'));
    symlinkSync(join(dir, 'nowhere'), join(out, 'role_results.ndjson'));
    const dangling = await cli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 's.db')], { env: env(s) });
    expect(dangling.code).toBe(2);
    expect(existsSync(join(dir, 'nowhere'))).toBe(false);
  });

  it('a file claimed before its first byte: a crash tail before the first commit is still cut', async () => {
    const s = await sim({ campaigns: 2, records: 30 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const dbPath = join(dir, 'state.db');
    const db = openDatabase(dbPath);
    await new NdjsonSink(db, new Checkpoints(db), out).close();
    expect(db.prepare('SELECT committed_bytes FROM ndjson_files ORDER BY path').pluck().all()).toEqual([0, 0, 0]);
    db.close();
    // What a kill -9 between the first append and its commit leaves.
    appendFileSync(join(out, 'session_results.ndjson'), '{"id":"half-written","sco');
    const result = await pullNdjson(s, dbPath, out);
    expect(exitCodeForPass(result)).toBe(0);
    const got = lines(join(out, 'session_results.ndjson'));
    expect(got.length).toBe(30);
    expect(got.join('\n')).not.toContain('half-written');
  });

  it('campaigns stored by `campaigns` or a SQLite pull still reach campaigns.ndjson, once', async () => {
    const s = await sim({ campaigns: 6, records: 5 });
    const dir = tempDir();
    const dbPath = join(dir, 'state.db');
    expect((await cli(['campaigns', '--db', dbPath], { env: env(s) })).code).toBe(0);
    const out = join(dir, 'out');
    expect((await cli(['pull', '--format', 'ndjson', '--out', out, '--db', dbPath], { env: env(s) })).code).toBe(0);
    expect(
      lines(join(out, 'campaigns.ndjson'))
        .map((l) => JSON.parse(l).id)
        .sort(),
    ).toEqual(s.data.campaigns.map((c) => c.id).sort());
    expect((await cli(['pull', '--format', 'ndjson', '--out', out, '--db', dbPath], { env: env(s) })).code).toBe(0);
    expect(lines(join(out, 'campaigns.ndjson')).length).toBe(6);

    // A SQLite pull, then a reset, then NDJSON into a new folder from the same database.
    const db2 = join(dir, 'two.db');
    expect((await cli(['pull', '--db', db2], { env: env(s) })).code).toBe(0);
    expect((await cli(['reset', '--all', '--db', db2])).code).toBe(0);
    const out2 = join(dir, 'out2');
    expect((await cli(['pull', '--format', 'ndjson', '--out', out2, '--db', db2], { env: env(s) })).code).toBe(0);
    expect(lines(join(out2, 'campaigns.ndjson')).length).toBe(6);
  });
});
