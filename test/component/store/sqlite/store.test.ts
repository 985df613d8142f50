/**
 * Issue 11, items 5 and 9: SQL lives in store/ only (campaigns, checkpoints, offsets, the destination
 * the checkpoints belong to), and the destination is a typed union stored as the text it always was.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RequestBudget } from '../../../../src/api/budget.js';
import { streamId } from '../../../../src/core/types.js';
import { CAMPAIGN_TYPES } from '../../../../src/spec/paths.js';
import { Campaigns } from '../../../../src/store/sqlite/campaigns.js';
import { SqliteCheckpoints } from '../../../../src/store/sqlite/checkpoints.js';
import { BUSY_TIMEOUT_MS, openDatabase } from '../../../../src/store/sqlite/db.js';
import { decodeDestination, describeDestination, encodeDestination } from '../../../../src/store/sqlite/destination.js';
import { tempDir } from '../../../helpers/index.js';

const SRC = fileURLToPath(new URL('../../../../src/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Database calls (better-sqlite3): a statement, a script, a pragma, a transaction. `RegExp.exec(text)` is not one. */
const DB_CALL = /\.(?:prepare|pragma|transaction)\(|\.exec\(\s*['"`]/;

describe('SQL lives in store/', () => {
  it('no file outside store/ prepares a statement, runs a script or sets a pragma (export too: its SQL is store/sqlite/export-sql.ts)', () => {
    const offenders = files(SRC)
      .map((f) => relative(SRC, f))
      .filter((f) => !f.startsWith('store/'))
      .flatMap((f) =>
        readFileSync(join(SRC, f), 'utf8')
          .split('\n')
          .flatMap((line, i) => (DB_CALL.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(offenders).toEqual([]);
  });

  it('the checker sees a database call and ignores a regular expression', () => {
    expect(DB_CALL.test("db.prepare('SELECT 1')")).toBe(true);
    expect(DB_CALL.test("db.pragma('busy_timeout = 1')")).toBe(true);
    expect(DB_CALL.test('db.exec(`CREATE TABLE t (x)`)')).toBe(true);
    expect(DB_CALL.test('const m = DURATION.exec(text.trim());')).toBe(false);
  });
});

describe('campaigns in the mirror (store/sqlite/campaigns.ts)', () => {
  function filled() {
    const db = openDatabase(join(tempDir(), 'mirror.db'));
    const campaigns = new Campaigns(db);
    campaigns.upsert(
      [
        { id: 'c1', name: 'Sales', type: 'SESSION_COMPLETION' },
        { id: 'c2', display_name: 'Support shown', type: 'ROLE_SUBMISSION' },
        { id: 'c3', name: 'Twin', type: 'SURVEY' },
        { id: 'c4', name: 'Twin' },
        { id: 'c5', type: 'ROLE_SUBMISSION' },
      ],
      '2026-01-01T00:00:00Z',
    );
    return { db, campaigns };
  }

  it('names each campaign by its name, else its display name, else its id', () => {
    const { db, campaigns } = filled();
    expect(Object.fromEntries(campaigns.names())).toEqual({ c1: 'Sales', c2: 'Support shown', c3: 'Twin', c4: 'Twin', c5: 'c5' });
    db.close();
  });

  it('skips exactly the campaigns whose type spec/paths.ts cannot route, ordered by name', () => {
    const { db, campaigns } = filled();
    expect(campaigns.skipped()).toEqual([
      { id: 'c3', name: 'Twin', type: 'SURVEY' },
      { id: 'c4', name: 'Twin', type: null },
    ]);
    // A supported type is never listed as skipped: the list comes from CAMPAIGN_TYPES, not a copy.
    campaigns.upsert(
      CAMPAIGN_TYPES.map((type, i) => ({ id: `t${i}`, name: `t${i}`, type })),
      '2026-01-02T00:00:00Z',
    );
    expect(campaigns.skipped().map((c) => c.id)).toEqual(['c3', 'c4']);
    db.close();
  });

  it('finds campaigns by name, and a campaign with streams by id', () => {
    const { db, campaigns } = filled();
    expect(campaigns.idsNamed('Twin').sort()).toEqual(['c3', 'c4']);
    expect(campaigns.idsNamed('Sales')).toEqual(['c1']);
    expect(campaigns.idsNamed('nobody')).toEqual([]);
    const checkpoints = new SqliteCheckpoints(db);
    expect(checkpoints.hasStreams('c1')).toBe(false);
    checkpoints.ensure(streamId('c1', 'session', null));
    expect(checkpoints.hasStreams('c1')).toBe(true);
    db.close();
  });
});

describe('the destination the checkpoints belong to is a typed union', () => {
  it('is stored as the text existing databases hold, and read back', () => {
    expect(encodeDestination({ kind: 'sqlite' })).toBe('sqlite');
    expect(encodeDestination({ kind: 'ndjson', out: '/data/out' })).toBe('ndjson:/data/out');
    expect(decodeDestination('sqlite')).toEqual({ kind: 'sqlite' });
    expect(decodeDestination('ndjson:/data/a:b')).toEqual({ kind: 'ndjson', out: '/data/a:b' });
    expect(describeDestination({ kind: 'sqlite' })).toBe('--format sqlite');
    expect(describeDestination({ kind: 'ndjson', out: '/data/out' })).toBe('--format ndjson --out /data/out');
  });

  it('a value no release wrote is named, not misread as a folder', () => {
    expect(() => decodeDestination('postgres:x')).toThrow(/destination "postgres:x"/);
  });

  it('a database written before the union (meta holds "ndjson:<path>") keeps its claim', () => {
    const db = openDatabase(join(tempDir(), 'mirror.db'));
    db.prepare("INSERT INTO meta (key, value) VALUES ('destination', 'ndjson:/old/out')").run();
    const checkpoints = new SqliteCheckpoints(db);
    const id = streamId('c1', 'session', null);
    checkpoints.ensure(id);
    checkpoints.advance(id, { from: undefined, to: 5n }, 1);
    expect(() => checkpoints.claimDestination({ kind: 'sqlite' })).toThrow(
      "this database's checkpoints are for --format ndjson --out /old/out, not --format sqlite",
    );
    checkpoints.claimDestination({ kind: 'ndjson', out: '/old/out' });
    checkpoints.reset([]);
    checkpoints.claimDestination({ kind: 'sqlite' });
    expect(db.prepare("SELECT value FROM meta WHERE key = 'destination'").pluck().get()).toBe('sqlite');
    db.close();
  });
});

describe('dead code and magic numbers', () => {
  it('the request budget keeps no count nobody reads (the client and the simulator count requests)', () => {
    const budget = new RequestBudget({ count: 2, windowMs: 1000 });
    budget.tryAcquire()?.();
    expect(Object.keys(budget)).not.toContain('granted');
  });

  it("a database waits BUSY_TIMEOUT_MS for another connection's lock", () => {
    const db = openDatabase(join(tempDir(), 'mirror.db'));
    expect(db.pragma('busy_timeout', { simple: true })).toBe(BUSY_TIMEOUT_MS);
    db.close();
  });
});
