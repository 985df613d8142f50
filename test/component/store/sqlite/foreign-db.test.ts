/**
 * A --db path that leads to the wrong file: another program's SQLite database is refused (exit 2)
 * exactly as it was found, by readers and writers alike; a database with several names (hard links)
 * is refused for writing, since writers using two names corrupt it (SQLite keeps a WAL per name).
 */
import { createHash } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../../src/store/sqlite/driver.js';
import { type CliResult, tempDir } from '../../../helpers/index.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

const md5 = (path: string) => createHash('md5').update(readFileSync(path)).digest('hex');

/**
 * A WAL-mode database at `path` whose commits (`sql`) stay in its -wal, as a killed writer leaves
 * them: the -wal is read while the connection is open and written back after its close (which
 * checkpoints and deletes it). Returns the -wal's bytes.
 */
function walWithCommits(path: string, sql: string): Buffer {
  const writer = new Database(path);
  writer.pragma('journal_mode = WAL');
  writer.pragma('wal_autocheckpoint = 0');
  writer.exec(sql);
  const wal = readFileSync(`${path}-wal`);
  writer.close();
  writeFileSync(`${path}-wal`, wal);
  return wal;
}

function expectUsage(r: CliResult, pattern: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}

describe("another program's SQLite file", () => {
  it('is refused by every command (exit 2) and left as it was: its mode, its journal mode, its bytes', async () => {
    const dir = tempDir();
    const path = join(dir, 'notes.db');
    const other = new Database(path);
    other.exec("CREATE TABLE notes (x); INSERT INTO notes VALUES ('precious')");
    other.close();
    chmodSync(path, 0o644);
    const before = md5(path);
    const s = await sharedSim({ campaigns: 2, records: 5 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const commands = [
      ['pull'],
      ['campaigns'],
      ['reconcile'],
      ['reset', '--all'],
      ['forget', '--user', 'a@example.com'],
      // Readers said "local storage failed: no such table: campaigns" (exit 74, "fix the storage").
      ['status'],
      ['status', '--check'],
      ['export', '--table', 'campaigns', '-o', join(dir, 'out.csv')],
      ['demo'],
    ];
    for (const args of commands) {
      const r = await runCli([...args, '--db', path], { env });
      expectUsage(r, /notes\.db already holds tables that are not campaign-sync's/);
      // Writers made the file 0600 and switched it to WAL before refusing it.
      expect((statSync(path).mode & 0o777).toString(8), args.join(' ')).toBe('644');
      expect(md5(path), args.join(' ')).toBe(before);
    }
    const check = new Database(path, { readonly: true });
    expect(check.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(check.prepare('SELECT x FROM notes').pluck().get()).toBe('precious');
    check.close();
  });

  it('in WAL mode, with commits in its WAL: refused, and neither the file nor its WAL touched', async () => {
    const dir = tempDir();
    const path = join(dir, 'app.db');
    const wal = walWithCommits(path, "CREATE TABLE notes (x); INSERT INTO notes VALUES ('in the wal')");
    const before = md5(path);
    const s = await sharedSim({ campaigns: 1, records: 2 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    for (const args of [['pull'], ['reset', '--all']]) {
      expectUsage(await runCli([...args, '--db', path], { env }), /app\.db already holds tables that are not campaign-sync's/);
      // The refusing close checkpointed the WAL into the file (4096 -> 8192 bytes) and deleted it.
      expect(md5(path), args.join(' ')).toBe(before);
      expect(readFileSync(`${path}-wal`).equals(wal), args.join(' ')).toBe(true);
    }
  });

  it('an SQLite file with no tables at all is no mirror for readers; a pull makes it one', async () => {
    const dir = tempDir();
    const path = join(dir, 'blank.db');
    const blank = new Database(path);
    blank.pragma('page_size = 4096');
    blank.exec('CREATE TABLE t (x); DROP TABLE t');
    blank.close();
    expect(statSync(path).size).toBeGreaterThan(0);
    expectUsage(await runCli(['status', '--db', path]), /blank\.db is not a campaign-sync mirror: it holds none of the mirror's tables/);
    const s = await sharedSim({ campaigns: 1, records: 3 });
    const mode = statSync(path).mode & 0o777;
    const r = await runCli(['pull', '--db', path, '--quiet'], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(r.code, r.stderr).toBe(0);
    // The file was there: its mode is its owner's.
    expect(statSync(path).mode & 0o777).toBe(mode);
    expect((await runCli(['status', '--db', path])).code).toBe(0);
  });
});

describe('a mirror with several names (hard links)', () => {
  it('is refused for writing under every name, read as usual, and written again once it has one name', async () => {
    const s = await sharedSim({ campaigns: 2, records: 10 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db, '--quiet'], { env })).code).toBe(0);
    const link = join(dir, 'h.db');
    linkSync(db, link);
    const before = md5(db);
    // Two watches, one per name, each took "its" lock and wrote its own WAL: the file was corrupt.
    const writers = [
      ['pull', '--db', link],
      ['watch', '--max-cycles', '1', '--db', link],
      ['pull', '--db', db],
      ['reset', '--all', '--db', db],
      ['forget', '--user', 'a@example.com', '--db', db],
    ];
    for (const args of writers) expectUsage(await runCli(args, { env }), /\.db has 2 names \(hard links\).*remove the other names/);
    expect(md5(db)).toBe(before);
    // Reading is harmless: status and export work under either name.
    expect((await runCli(['status', '--db', link])).code).toBe(0);
    expect((await runCli(['export', '--table', 'campaigns', '--db', db, '-o', join(dir, 'c.csv')])).code).toBe(0);
    unlinkSync(link);
    const r = await runCli(['pull', '--db', db, '--quiet'], { env });
    expect(r.code, r.stderr).toBe(0);
  });
});

describe('a database file of 0 bytes beside a WAL that holds commits', () => {
  it('is opened by no command (exit 74): SQLite would delete the WAL, and every commit in it', async () => {
    const dir = tempDir();
    const db = join(dir, 'm.db');
    // A WAL with pages, kept as a killed writer leaves it; then the main file truncated.
    const wal = walWithCommits(db, "CREATE TABLE t (x); INSERT INTO t VALUES ('committed')");
    truncateSync(db, 0);
    const s = await sharedSim({ campaigns: 1, records: 2 });
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    for (const args of [['status'], ['status', '--check'], ['export', '--table', 'campaigns', '-o', join(dir, 'c.csv')], ['pull']]) {
      const r = await runCli([...args, '--db', db], { env });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(74);
      expect(r.stderr).toMatch(/m\.db is empty, but \S*m\.db-wal beside it holds \d+ bytes of commits/);
      // status said "not a campaign-sync mirror" and the WAL was gone.
      expect(readFileSync(`${db}-wal`).equals(wal), args.join(' ')).toBe(true);
    }
  });
});
