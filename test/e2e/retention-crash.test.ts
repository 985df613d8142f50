/**
 * A retention's erasure killed (kill -9) between the two NDJSON files' renames is finished by the
 * next `forget --older-than` (or pull) before anything else: no byte of the older results is left
 * in any file, the younger ones are all there.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { cli, sim, tempDir } from '../helpers/index.js';

const RECORDS = 30;
const dist = (path: string) => JSON.stringify(fileURLToPath(new URL(`../../dist/store/${path}`, import.meta.url)));

function everyByte(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1'))
    .join('\n');
}

describe('a retention killed between its files', () => {
  it('is finished by the next forget --older-than', async () => {
    const s = await sim({ campaigns: 2, records: RECORDS });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_BASE_URL: s.url } };
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await cli(['pull', '--db', db, '--format', 'ndjson', '--out', join(dir, 'out')], env)).code).toBe(0);
    const records = s.data.campaigns.flatMap((c) =>
      Array.from({ length: RECORDS }, (_, i) =>
        c.type === 'SESSION_COMPLETION' ? s.data.sessionResult(c, i) : s.data.roleResult(c, i, 'DETAILED'),
      ),
    ) as Array<{ id: string; created_at: string }>;
    // Between two distinct dates in the middle, far from both (the command reads its own clock later).
    const times = [...new Set(records.map((r) => Date.parse(r.created_at)))].sort((a, b) => a - b);
    const k = Math.floor(times.length / 2);
    const cut = ((times[k - 1] as number) + (times[k] as number)) / 2;
    expect((times[k] as number) - (times[k - 1] as number)).toBeGreaterThan(3_600_000);
    const old = records.filter((r) => Date.parse(r.created_at) < cut).map((r) => r.id);
    const young = records.filter((r) => Date.parse(r.created_at) >= cut).map((r) => r.id);
    expect(old.length).toBeGreaterThan(0);
    const script = `
      const { openDatabase } = await import(${dist('sqlite/db.js')});
      const { eraseOlderThan } = await import(${dist('sqlite/erasure.js')});
      eraseOlderThan(openDatabase(process.argv[1]), Number(process.argv[2]), {
        afterRename: () => process.kill(process.pid, 'SIGKILL'),
      });`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script, db, String(cut)], { encoding: 'utf8' });
    expect(child.signal, child.stderr).toBe('SIGKILL');
    // The other file still holds some of them.
    expect(old.some((id) => everyByte(dir).includes(id))).toBe(true);
    const next = await cli(['forget', '--db', db, '--older-than', `${Math.round((Date.now() - cut) / 1000)}s`, '--yes', '--json'], env);
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).finished_earlier).toBe(true);
    const bytes = everyByte(dir);
    for (const id of old) expect(bytes.includes(id), id).toBe(false);
    for (const id of young) expect(bytes.includes(id), id).toBe(true);
    const m = openDatabase(db, { readonly: true });
    expect(m.prepare("SELECT count(*) FROM meta WHERE key = 'erase_pending' OR key LIKE 'ndjson_rewrite:%'").pluck().get()).toBe(0);
    m.close();
  });
});
