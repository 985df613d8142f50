/** The key never appears in output, logs, errors, the database, NDJSON files or exports. */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, cli, sim, tempDir } from '../helpers/index.js';

describe('the API key stays secret', () => {
  it('appears in no output and no artefact of a whole session of commands', async () => {
    const key = 'sk-live-7c1d9e0f-SECRET-b44a';
    const s = await sim({ campaigns: 3, records: 30, apiKey: key, unknownTypeCampaigns: 1 });
    const dir = tempDir();
    const keyPath = join(dir, 'key.txt');
    writeFileSync(keyPath, `${key}\n`, { mode: 0o600 });
    const db = join(dir, 'm.db');
    const viaFile = ['--base-url', s.url, '--api-key-file', keyPath];
    const viaEnv = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: key };
    const outputs: CliResult[] = [];
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const r = await cli(args, { env, cwd: dir });
      outputs.push(r);
      return r;
    };
    expect((await run(['campaigns', '--db', db, ...viaFile])).code).toBe(0);
    expect((await run(['pull', '--db', db, ...viaFile, '--json'])).code).toBe(0);
    expect((await run(['pull', '--db', join(dir, 'n.db'), '--format', 'ndjson', '--out', join(dir, 'nd')], viaEnv)).code).toBe(0);
    expect((await run(['watch', '--db', db, '--max-cycles', '1', '--interval', '1s', '--json'], viaEnv)).code).toBe(0);
    expect((await run(['status', '--db', db])).code).toBe(0);
    expect((await run(['export', '--db', db, '--table', 'session-results', '-o', join(dir, 'sr.csv')])).code).toBe(0);
    expect((await run(['export', '--db', db, '--table', 'role-results', '--format', 'ndjson', '-o', join(dir, 'rr.ndjson')])).code).toBe(0);
    // Failures print requests and reasons, never the key.
    expect(
      (await run(['pull', '--db', join(dir, 'x.db'), '--base-url', s.url, '--campaign', 'nope'], { CAMPAIGN_SYNC_API_KEY: key })).code,
    ).toBe(2);
    expect(
      (
        await run(['pull', '--db', join(dir, 'y.db'), '--base-url', 'http://127.0.0.1:9', '--max-retries', '0'], {
          CAMPAIGN_SYNC_API_KEY: key,
        })
      ).code,
    ).toBe(5);
    expect(
      (await run(['pull', '--db', join(dir, 'z.db'), '--base-url', 'http://api.example.com'], { CAMPAIGN_SYNC_API_KEY: key })).code,
    ).toBe(2);

    for (const o of outputs) expect(o.stdout + o.stderr).not.toContain(key);
    const files: string[] = [];
    const walk = (d: string) => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p !== keyPath) files.push(p);
      }
    };
    walk(dir);
    expect(files.length).toBeGreaterThan(8);
    for (const f of files) expect(readFileSync(f).includes(key), f).toBe(false);
    // And everything that holds candidates' data is private.
    for (const f of files) expect((statSync(f).mode & 0o777).toString(8), f).toBe('600');
  });
});
