/**
 * A config file that cannot be used says why in one line an operator can act on: a syntax error
 * names the line and column (and never repeats the file's text, which may hold a password); a file
 * that may not be read names the file and the OS's reason in words. Both exit 2.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, type CliResult, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

/** The built CLI as `nobody` when we are root (root reads any file), else as ourselves. */
function cliAsUser(args: string[], cwd: string): Promise<CliResult> {
  const argv = [process.execPath, BIN, ...args];
  const [cmd, ...rest] = ROOT ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...argv] : argv;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, rest, {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('a config file that cannot be used', () => {
  it('a TOML syntax error names the line and column, without the file text', async () => {
    const dir = tempDir();
    const file = join(dir, 'campaign-sync.toml');
    writeFileSync(file, '[profiles.work]\ndb = "postgres://sync:S3cret@db/analytics"\npage_size = = 100\n', { mode: 0o600 });
    const r = await runCli(['status', '--profile', 'work'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `campaign-sync: ${file}:3:13: not valid TOML: invalid value (line 3, column 13); fix the file, or give another with --config\n`,
    );
    expect(r.stderr).not.toContain('S3cret');
  });

  it('one that may not be read names the file and the reason in words', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const file = join(dir, 'campaign-sync.toml');
    writeFileSync(file, '[profiles.work]\npage_size = 10\n', { mode: 0o200 });
    if (ROOT) chownSync(file, NOBODY, NOBODY);
    const r = await cliAsUser(['status', '--profile', 'work', '--config', file], dir);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(`campaign-sync: ${file}: cannot read the config file: permission denied (EACCES)\n`);
  });
});

describe('an empty --db', () => {
  it('is exit 2 naming where it came from, and nothing is created (an unset variable in --db "$MIRROR")', async () => {
    const dir = tempDir();
    for (const args of [
      ['status', '--db', ''],
      ['pull', '--db', '', '--base-url', 'http://127.0.0.1:9'],
    ]) {
      const r = await runCli(args, { cwd: dir, env: { CAMPAIGN_SYNC_API_KEY: 'k' } });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe("campaign-sync: --db: is empty; give the mirror's file or postgres:// URL\n");
    }
    const viaProfile = join(dir, 'c.toml');
    writeFileSync(viaProfile, '[profiles.x]\ndb = ""\n', { mode: 0o600 });
    const r = await runCli(['status', '--config', viaProfile, '--profile', 'x'], { cwd: dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/db.*: is empty/);
    expect(readdirSync(dir)).toEqual(['c.toml']);
  });
});
