/**
 * A file that is not empty and not an SQLite database is never opened as one: exit 2, the file
 * unchanged. SQLite itself refused only files from some size on; a few bytes (`echo > m.db`, a typo
 * naming a notes file) it took for an empty database and overwrote.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/db.js';
import { cli, tempDir } from './helpers/index.js';

describe('a --db that is someone else’s file', () => {
  it.each([['\n'], ['x'], ['notes: call back'], ['SQLite format'], ['SQLite format 2\0 and more'], ['a'.repeat(4096)]])(
    '%j: a usage error, the file unchanged',
    (content) => {
      const path = join(tempDir(), 'm.db');
      writeFileSync(path, content);
      expect(() => openDatabase(path)).toThrow(
        `${path} is not a campaign-sync database: it is not an SQLite file; nothing was written to it`,
      );
      expect(() => openDatabase(path, { mustExist: true, readonly: true })).toThrow(/is not an SQLite file/);
      expect(readFileSync(path, 'utf8')).toBe(content);
    },
  );

  it('an empty file is a new database, and a database opens again', () => {
    const path = join(tempDir(), 'm.db');
    writeFileSync(path, '');
    openDatabase(path).close();
    openDatabase(path).close();
    openDatabase(path, { mustExist: true, readonly: true }).close();
  });

  it('pull on a one-byte file exits 2 before any request, and leaves it', async () => {
    const path = join(tempDir(), 'm.db');
    writeFileSync(path, '\n');
    const r = await cli(['pull', '--db', path], { env: { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`campaign-sync: ${path} is not a campaign-sync database: it is not an SQLite file; nothing was written to it\n`);
    expect(readFileSync(path, 'utf8')).toBe('\n');
  });
});
