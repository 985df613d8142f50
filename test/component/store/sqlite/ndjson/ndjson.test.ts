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
import { RequestBudget } from '../../../../../src/api/budget.js';
import { ApiClient } from '../../../../../src/api/client.js';
import { exitCodeForPass } from '../../../../../src/errors.js';
import type { RunningSimulator } from '../../../../../src/simulator/server.js';
import { SqliteCheckpoints } from '../../../../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../../../../src/store/sqlite/db.js';
import { NdjsonStateError } from '../../../../../src/store/sqlite/ndjson/file.js';
import { NdjsonSink } from '../../../../../src/store/sqlite/ndjson/sink.js';
import { RunLock } from '../../../../../src/store/sqlite/run-lock.js';
import { runPass } from '../../../../../src/sync/pass.js';
import { clientConfig, servedRecords, sim, tempDir } from '../../../../helpers/index.js';
import { passDefaults } from '../../../../helpers/mock.js';
import { runCli } from '../../../../helpers/run-cli.js';

async function pullNdjson(s: RunningSimulator, dbPath: string, out: string, pageSize = 100) {
  const db = openDatabase(dbPath);
  const state = new SqliteCheckpoints(db);
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
    // The three files and the manifest (_manifest.ndjson).
    expect(db.prepare('SELECT count(*) FROM ndjson_files').pluck().get()).toBe(4);
    db.close();
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
    expect(() => new NdjsonSink(db, new SqliteCheckpoints(db), out)).toThrow(NdjsonStateError);
    db.close();
    expect(statSync(file).size).toBe(100);
    const run = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'state.db')], {
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
    expect((await runCli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'a')], { env })).code).toBe(0);
    // Without --format/--out the database keeps feeding its folder.
    const again = await runCli(['pull', '--db', db, '--json'], { env });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).records).toBe(0);
    const sqlite = await runCli(['pull', '--db', db, '--format', 'sqlite'], { env });
    expect(sqlite.code).toBe(2);
    expect(sqlite.stderr).toContain(`checkpoints are for --format ndjson --out ${join(dir, 'a')}, not --format sqlite`);
    const other = await runCli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'b')], { env });
    expect(other.code).toBe(2);
    expect((await runCli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'a')], { env })).code).toBe(0);
    expect((await runCli(['reset', '--all', '--db', db])).code).toBe(0);
    const moved = await runCli(['pull', '--db', db, '--format', 'sqlite', '--json'], { env });
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout).records).toBe(30);
  });

  it('--out alone means NDJSON (it went into SQLite without a word); with --format sqlite it is exit 2', async () => {
    const s = await sim({ campaigns: 2, records: 15 });
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const db = join(dir, 'state.db');
    const r = await runCli(['pull', '--db', db, '--out', join(dir, 'drop'), '--quiet'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(
      readFileSync(join(dir, 'drop', 'session_results.ndjson'), 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(15);
    // Another folder for the same checkpoints names the one given, and no format the user never typed.
    const other = await runCli(['pull', '--db', db, '--out', join(dir, 'other')], { env });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`not --format ndjson --out ${join(dir, 'other')}`);
    // From the environment too.
    const viaEnv = await runCli(['pull', '--db', join(dir, 'env.db'), '--quiet'], {
      env: { ...env, CAMPAIGN_SYNC_OUT: join(dir, 'env-drop') },
    });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(existsSync(join(dir, 'env-drop', 'role_results.ndjson'))).toBe(true);
    const both = await runCli(['pull', '--db', join(dir, 'x.db'), '--format', 'sqlite', '--out', join(dir, 'x')], { env });
    expect(both.code).toBe(2);
    expect(both.stderr.trim()).toBe(
      'campaign-sync: --out names an NDJSON folder, but --format sqlite writes records into --db; drop one of them',
    );
    expect(existsSync(join(dir, 'x.db'))).toBe(false);
    // A profile's format against --out: named by the profile's key.
    const config = join(dir, 'campaign-sync.toml');
    writeFileSync(config, '[profiles.lite]\nformat = "sqlite"\n', { mode: 0o600 });
    const fromProfile = await runCli(
      ['pull', '--config', config, '--profile', 'lite', '--db', join(dir, 'x.db'), '--out', join(dir, 'x')],
      {
        env,
      },
    );
    expect(fromProfile.code).toBe(2);
    expect(fromProfile.stderr.trim()).toBe(
      `campaign-sync: --out names an NDJSON folder, but ${config}: profiles.lite.format = "sqlite" writes records into --db; drop one of them`,
    );
    const help = await runCli(['pull', '--help']);
    const text = help.stdout.replace(/\s+/g, ' ');
    expect(text).toContain(
      '--format <format> where records go (default: what this database fed last; else ndjson with --out, sqlite without)',
    );
    expect(text).toContain('--out <dir> NDJSON folder; given alone, it means --format ndjson (default: ./campaign-sync-out)');
  });
});

describe('an NDJSON file is cut back only to what this database committed', () => {
  const env = (s: RunningSimulator) => ({ CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey });

  it('a second database pointed at a folder another one filled is refused (exit 2) and changes nothing', async () => {
    const s = await sim({ campaigns: 2, records: 150 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const a = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'a.db')], { env: env(s) });
    expect(a.code, a.stderr).toBe(0);
    const before = ['campaigns', 'session_results', 'role_results'].map((f) => readFileSync(join(out, `${f}.ndjson`), 'utf8'));
    expect(lines(join(out, 'role_results.ndjson')).length).toBe(150);
    const b = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'b.db')], { env: env(s) });
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
    const run = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 's.db')], { env: env(s) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/role_results\.ndjson is a symbolic link; campaign-sync does not follow links/);
    expect(readFileSync(victim, 'utf8')).toBe('my own notes\n');
    expect(statSync(victim).mode & 0o777).toBe(0o644);
    // An empty file the database never wrote is taken; a dangling link is refused all the same.
    rmSync(join(out, 'role_results.ndjson'));
    symlinkSync(join(dir, 'nowhere'), join(out, 'role_results.ndjson'));
    const dangling = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 's.db')], { env: env(s) });
    expect(dangling.code).toBe(2);
    expect(existsSync(join(dir, 'nowhere'))).toBe(false);
  });

  it('a file claimed before its first byte: a crash tail before the first commit is still cut', async () => {
    const s = await sim({ campaigns: 2, records: 30 });
    const dir = tempDir();
    const out = join(dir, 'out');
    const dbPath = join(dir, 'state.db');
    const db = openDatabase(dbPath);
    await new NdjsonSink(db, new SqliteCheckpoints(db), out).close();
    // The three files and the manifest.
    expect(db.prepare('SELECT committed_bytes FROM ndjson_files ORDER BY path').pluck().all()).toEqual([0, 0, 0, 0]);
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
    expect((await runCli(['campaigns', '--db', dbPath], { env: env(s) })).code).toBe(0);
    const out = join(dir, 'out');
    expect((await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', dbPath], { env: env(s) })).code).toBe(0);
    expect(
      lines(join(out, 'campaigns.ndjson'))
        .map((l) => JSON.parse(l).id)
        .sort(),
    ).toEqual(s.data.campaigns.map((c) => c.id).sort());
    expect((await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', dbPath], { env: env(s) })).code).toBe(0);
    expect(lines(join(out, 'campaigns.ndjson')).length).toBe(6);

    // A SQLite pull, then a reset, then NDJSON into a new folder from the same database.
    const db2 = join(dir, 'two.db');
    expect((await runCli(['pull', '--db', db2], { env: env(s) })).code).toBe(0);
    expect((await runCli(['reset', '--all', '--db', db2])).code).toBe(0);
    const out2 = join(dir, 'out2');
    expect((await runCli(['pull', '--format', 'ndjson', '--out', out2, '--db', db2], { env: env(s) })).code).toBe(0);
    expect(lines(join(out2, 'campaigns.ndjson')).length).toBe(6);
  });
});

/** The CLI's environment for a simulator, with a budget that never makes a test wait. */
const fastEnv = (s: RunningSimulator) => ({
  CAMPAIGN_SYNC_BASE_URL: s.url,
  CAMPAIGN_SYNC_API_KEY: s.apiKey,
  CAMPAIGN_SYNC_RATE_LIMIT: '100000/1m',
});

describe('one process at a time in an NDJSON folder, whatever database it writes from', () => {
  const env = fastEnv;
  const allParse = (path: string) => lines(path).every((l) => typeof JSON.parse(l) === 'object');

  it('a pull into a folder another campaign-sync is writing is refused (exit 75) and writes nothing', async () => {
    const s = await sim({ campaigns: 2, records: 40 });
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    // What another database's pull holds while it runs.
    const held = RunLock.acquireFolder(out);
    try {
      const run = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'b.db')], { env: env(s) });
      expect(run.code, run.stderr).toBe(75);
      expect(run.stderr).toContain(`another campaign-sync is writing NDJSON into ${out} (pid ${process.pid} on `);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(existsSync(join(out, 'session_results.ndjson'))).toBe(false);
    } finally {
      held.release();
    }
    // Released (as when its holder exits, kill -9 included): the same pull runs.
    const after = await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, 'b.db')], { env: env(s) });
    expect(after.code, after.stderr).toBe(0);
    expect(lines(join(out, 'session_results.ndjson'))).toHaveLength(40);
    expect(statSync(join(out, '.campaign-sync.lock')).mode & 0o777).toBe(0o600);
  });

  it('the folder is locked by its real path: a link to it is the same folder', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    symlinkSync(out, join(dir, 'link'));
    const held = RunLock.acquireFolder(out);
    try {
      expect(() => RunLock.acquireFolder(join(dir, 'link'))).toThrow(/another campaign-sync is writing NDJSON into/);
    } finally {
      held.release();
    }
  });

  it('two databases pulling into one empty folder at once: one writes, the other is refused, every line whole', async () => {
    const s = await sim({ campaigns: 4, records: 2000, seed: 11 });
    const [one, two] = s.data.campaigns.filter((c) => c.type === 'SESSION_COMPLETION');
    for (let round = 0; round < 2; round++) {
      const dir = tempDir();
      const out = join(dir, 'out');
      mkdirSync(out);
      const pull = (db: string, campaign: string) =>
        runCli(['pull', '--format', 'ndjson', '--out', out, '--db', join(dir, db), '--campaign', campaign, '--quiet'], { env: env(s) });
      const [a, b] = await Promise.all([pull('a.db', String(one?.id)), pull('b.db', String(two?.id))]);
      const codes = [a.code, b.code].sort();
      // Refused by the lock while the other runs (75), or, when the other had already finished, by
      // the ownership rule (2); never both written.
      expect(codes[0], `${a.stderr}${b.stderr}`).toBe(0);
      expect([2, 75]).toContain(codes[1]);
      expect(allParse(join(out, 'session_results.ndjson'))).toBe(true);
      expect(lines(join(out, 'session_results.ndjson'))).toHaveLength(2000);
    }
  });
});

describe('an NDJSON file changed or gone outside campaign-sync', () => {
  const env = fastEnv;
  /** A simulator of 2 campaigns × `records`, pulled by the CLI into `out` with its state in `db`. */
  async function pulled(records: number) {
    const s = await sim({ campaigns: 2, records });
    const dir = tempDir();
    const out = join(dir, 'out');
    const db = join(dir, 'state.db');
    expect((await runCli(['pull', '--format', 'ndjson', '--out', out, '--db', db], { env: env(s) })).code).toBe(0);
    return { s, out, db };
  }

  it('rewritten to more bytes (pretty-printed): refused (exit 2), not cut in the middle of a record', async () => {
    const { s, out, db } = await pulled(30);
    const file = join(out, 'session_results.ndjson');
    const pretty = lines(file)
      .map((l) => `${JSON.stringify(JSON.parse(l), null, 1)}\n`)
      .join('');
    writeFileSync(file, pretty);
    const run = await runCli(['pull', '--db', db], { env: env(s) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /session_results\.ndjson: the line that ends at its committed length \(\d+ bytes\) is not the one this database wrote there/,
    );
    expect(readFileSync(file, 'utf8')).toBe(pretty);
  });

  it('its lines replaced by others of the same length: refused, the file as it was', async () => {
    const { s, out, db } = await pulled(30);
    const file = join(out, 'role_results.ndjson');
    // The last record edited in place (a score changed, same length), then a line of a partial write.
    const text = readFileSync(file, 'utf8');
    const last = text.slice(text.lastIndexOf('\n', text.length - 2) + 1);
    const edited = last.replace(/"id":"(.)/, (_m, c: string) => `"id":"${c === 'a' ? 'b' : 'a'}`);
    expect(edited).not.toBe(last);
    writeFileSync(file, `${text.slice(0, text.length - last.length)}${edited}{"id":"tail`);
    const before = readFileSync(file, 'utf8');
    const run = await runCli(['pull', '--db', db], { env: env(s) });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('role_results.ndjson: the line that ends at its committed length');
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('a folder deleted between runs: exit 2 and nothing recreated; after `reset --all` the next pull writes it anew', async () => {
    const { s, out, db } = await pulled(25);
    rmSync(out, { recursive: true });
    const run = await runCli(['pull', '--db', db], { env: env(s) });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\.ndjson: \d+ bytes were committed to it but it is gone; nothing was written/);
    expect(run.stderr).toContain('reset --all');
    expect(existsSync(out)).toBe(false);
    expect((await runCli(['reset', '--all', '--db', db])).code).toBe(0);
    const again = await runCli(['pull', '--db', db, '--json'], { env: env(s) });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).records).toBe(50);
    expect(lines(join(out, 'session_results.ndjson'))).toHaveLength(25);
    expect(lines(join(out, 'role_results.ndjson'))).toHaveLength(25);
    expect(lines(join(out, 'campaigns.ndjson'))).toHaveLength(2);
    const status = await runCli(['status', '--db', db, '--json']);
    expect(JSON.parse(status.stdout).streams.map((r: { records: number }) => r.records)).toEqual([25, 25]);
  });
});
