/** Issue 10, item 11: a key file that group or others can read is used, with one warning (as ssh does). */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveApiConfig } from '../../../src/config/config.js';
import { sim, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const SECRET = 'sk-key-file-secret-0123456789';

function keyFile(mode: number, key = SECRET): string {
  const p = join(tempDir(), 'key');
  writeFileSync(p, `${key}\n`);
  chmodSync(p, mode); // after writing: the umask must not decide the mode under test
  return p;
}

describe('a key file others can read', () => {
  it('is used, and resolveApiConfig returns one warning that names the path and mode, never the key', () => {
    for (const [mode, word] of [
      [0o644, 'readable'],
      [0o640, 'readable'],
      [0o604, 'readable'],
      [0o620, 'open'],
    ] as const) {
      const path = keyFile(mode);
      const config = resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: path }, {});
      expect(config.apiKey).toBe(SECRET);
      expect(config.warnings).toEqual([`${path} is ${word} by others (mode 0${mode.toString(8)}); chmod 600 it`]);
    }
    for (const mode of [0o600, 0o400])
      expect(resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: keyFile(mode) }, {}).warnings).toEqual([]);
    expect(resolveApiConfig({ baseUrl: 'https://a.example' }, { CAMPAIGN_SYNC_API_KEY: SECRET }).warnings).toEqual([]);
  });

  it('pull, watch and campaigns print the warning once on stderr, and work', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const open = keyFile(0o644, s.apiKey);
    const db = join(tempDir(), 'm.db');
    for (const args of [['pull'], ['watch', '--max-cycles', '1'], ['campaigns'], ['pull', '--json']]) {
      const r = await runCli([...args, '--db', db, '--base-url', s.url, '--api-key-file', open]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stderr.match(/warning:/g), args.join(' ')).toHaveLength(1);
      expect(r.stderr).toContain(`warning: ${open} is readable by others (mode 0644); chmod 600 it\n`);
      expect(r.stdout + r.stderr).not.toContain(s.apiKey);
    }
    const quiet = await runCli(['pull', '--db', db, '--base-url', s.url, '--api-key-file', open, '--quiet']);
    expect(quiet.stdout + quiet.stderr).toBe('');
    const private_ = await runCli(['pull', '--db', db, '--base-url', s.url, '--api-key-file', keyFile(0o600, s.apiKey)]);
    expect(private_.code).toBe(0);
    expect(private_.stderr).toBe('');
  });
});

describe('a key an HTTP header cannot carry', () => {
  it('is a usage error naming where it came from and the character, never the key', () => {
    const cases: Array<[string, string, string]> = [
      [`${SECRET}\r\nX-Injected: 1`, 'U+000D', `${SECRET.length + 1}`],
      [`${SECRET} two`, 'U+0020', `${SECRET.length + 1}`],
      [`\u0001${SECRET}`, 'U+0001', '1'],
      [`${SECRET}é`, 'U+00E9', `${SECRET.length + 1}`],
    ];
    for (const [key, code, at] of cases) {
      const fromEnv = () => resolveApiConfig({ baseUrl: 'https://a.example' }, { CAMPAIGN_SYNC_API_KEY: key });
      expect(fromEnv).toThrow(
        `CAMPAIGN_SYNC_API_KEY: the key holds a character an HTTP header cannot carry (${code} at position ${at}); the key is printable ASCII with no spaces`,
      );
      try {
        fromEnv();
      } catch (err) {
        expect((err as Error).message).not.toContain(SECRET);
      }
    }
    const file = keyFile(0o600, `\u0001${SECRET}`);
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example', apiKeyFile: file }, {})).toThrow(
      `--api-key-file: ${file}: the key holds a character an HTTP header cannot carry (U+0001 at position 1)`,
    );
    expect(() => resolveApiConfig({ baseUrl: 'https://a.example' }, { CAMPAIGN_SYNC_API_KEY: '   ' })).toThrow(
      'CAMPAIGN_SYNC_API_KEY is empty',
    );
  });

  it('the CLI exits 2 at once, without a request (not five retries, then exit 5 as if the service were down)', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const r = await runCli(['campaigns'], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: `${s.apiKey}\r\nX: 1` } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `campaign-sync: CAMPAIGN_SYNC_API_KEY: the key holds a character an HTTP header cannot carry (U+000D at position ${s.apiKey.length + 1}); the key is printable ASCII with no spaces\n`,
    );
    expect(s.stats.requests).toBe(0);
  });
});
