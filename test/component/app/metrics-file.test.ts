/**
 * `pull --metrics-file <path>`: the metrics `watch --metrics-listen` serves, in the Prometheus text
 * format, written atomically (a private temporary file in the same folder, renamed) after the pass,
 * and after a pass that synced nothing too.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SyncMetrics } from '../../../src/app/metrics.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

const SAMPLE = /^[a-z_:][a-z0-9_:]*(\{[a-z_]+="[^"\n]*"(,[a-z_]+="[^"\n]*")*\})? -?[0-9.e+-]+$/;

/** Every line of Prometheus' text format: # HELP / # TYPE, or a sample. */
function samples(text: string): string[] {
  expect(text.endsWith('\n')).toBe(true);
  // Empty lines are allowed by the format (and ignored).
  const lines = text
    .trimEnd()
    .split('\n')
    .filter((l) => l !== '');
  for (const line of lines) if (!line.startsWith('# HELP ') && !line.startsWith('# TYPE ')) expect(line).toMatch(SAMPLE);
  return lines.filter((l) => !l.startsWith('#'));
}

const names = (text: string) => new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));

describe('pull --metrics-file', () => {
  let saved: number | undefined;
  afterEach(() => {
    if (saved !== undefined) process.umask(saved);
    saved = undefined;
  });

  it('writes the metrics of --metrics-listen, 0644 less the umask, with nothing left beside it', async () => {
    saved = process.umask(0o027);
    const s = await sharedSim({ campaigns: 2, records: 30 });
    const dir = tempDir();
    const prom = join(dir, 'textfile', 'campaign_sync.prom');
    mkdirSync(join(dir, 'textfile'));
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const r = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', prom, '--quiet'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect((statSync(prom).mode & 0o777).toString(8)).toBe('640');
    expect(readdirSync(join(dir, 'textfile'))).toEqual(['campaign_sync.prom']);
    const text = readFileSync(prom, 'utf8');
    // The same metrics the endpoint serves.
    expect(names(text)).toEqual(names(await new SyncMetrics().registry.metrics()));
    const lines = samples(text);
    expect(lines).toContain('campaign_sync_last_pass_exit_code 0');
    expect(lines).toContain('campaign_sync_passes_total{result="ok"} 1');
    expect(lines.filter((l) => l.startsWith('campaign_sync_last_success_timestamp_seconds{')).length).toBe(2);
    expect(lines.some((l) => /^campaign_sync_requests_total\{endpoint="\/v1\/campaigns",status="200"\} [1-9]/.test(l))).toBe(true);
    expect(text).not.toContain(s.apiKey);

    // Run again: replaced whole, counting on from the first run (kept in the mirror), in the mode asked for.
    const again = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', prom, '--metrics-file-mode', '0604', '--quiet'], {
      env,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(samples(readFileSync(prom, 'utf8'))).toContain('campaign_sync_passes_total{result="ok"} 2');
    expect((statSync(prom).mode & 0o777).toString(8)).toBe('604');
    expect(readdirSync(join(dir, 'textfile'))).toEqual(['campaign_sync.prom']);
  });

  it('a pass that synced nothing still writes its exit code', async () => {
    const dir = tempDir();
    const prom = join(dir, 'm.prom');
    // Port 9 on loopback: nothing listens (connection refused at once).
    const env = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' };
    const r = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', prom, '--max-retries', '0', '--quiet'], { env });
    expect(r.code, r.stderr).toBe(5);
    const lines = samples(readFileSync(prom, 'utf8'));
    expect(lines).toContain('campaign_sync_last_pass_exit_code 5');
    expect(lines).toContain('campaign_sync_passes_total{result="failed"} 1');
  });

  it('a link at the path is replaced, never written through; a folder is exit 2; a missing folder is 74', async () => {
    const s = await sharedSim({ campaigns: 1, records: 5 });
    const dir = tempDir();
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'keep me\n');
    const prom = join(dir, 'm.prom');
    symlinkSync(victim, prom);
    const r = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', prom, '--quiet'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('keep me\n');
    expect(lstatSync(prom).isFile()).toBe(true);

    const folder = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', dir, '--quiet'], { env });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toMatch(/--metrics-file .*: is not a regular file/);
    const missing = await runCli(['pull', '--db', join(dir, 'm.db'), '--metrics-file', join(dir, 'nope', 'm.prom'), '--quiet'], { env });
    expect(missing.code).toBe(74);
    expect(missing.stderr).toMatch(/--metrics-file: cannot write .*nope\/m\.prom/);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  });
});
