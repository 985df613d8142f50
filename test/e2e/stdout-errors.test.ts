/**
 * A stdout that fails: its reader went away (`pull | true`, `watch | head -1`: EPIPE) or the disk
 * under `> file` is full (ENOSPC, here /dev/full). Neither may end in Node's "Unhandled 'error'
 * event" stack trace and exit 1, nor in exit 0 with the output lost: a reader that went away ends the
 * command as a signal would (its own exit code, no trace), and a failed write is exit 74 with one line.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, sim, tempDir } from '../helpers/index.js';

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the CLI with stdout to /dev/full, or to a pipe closed after its first `keep` bytes. */
function run(args: string[], url: string, stdout: 'full' | { keep: number }): Promise<Ran> {
  const fd = stdout === 'full' ? openSync('/dev/full', 'w') : undefined;
  const env = { ...process.env, CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: 'demo-key', XDG_STATE_HOME: tempDir() };
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', fd ?? 'pipe', 'pipe'] });
  if (fd !== undefined) closeSync(fd);
  const t0 = Date.now();
  let out = '';
  let err = '';
  child.stderr?.setEncoding('utf8').on('data', (d) => (err += d));
  if (stdout !== 'full') {
    const pipe = child.stdout;
    if (pipe === null) throw new Error('no stdout pipe');
    pipe.setEncoding('utf8');
    const take = (d: string) => {
      out += d;
      // The reader goes away, as `head -1` does after its line.
      if (out.length >= stdout.keep) {
        pipe.off('data', take);
        pipe.destroy();
      }
    };
    pipe.on('data', take);
    if (stdout.keep === 0) pipe.destroy();
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: out, stderr: err, ms: Date.now() - t0 });
    }),
  );
}

const haveFull = existsSync('/dev/full');

describe('stdout that fails', () => {
  it.each([
    ['pull', ['pull']],
    ['pull --json', ['pull', '--json']],
    ['reconcile', ['reconcile']],
  ])('%s into a pipe whose reader is gone: exit 0, no stack trace, the records committed', async (_, args) => {
    const s = await sim({ campaigns: 2, records: 30 });
    const db = join(tempDir(), 'm.db');
    const r = await run([...args, '--db', db], s.url, { keep: 0 });
    expect(r.stderr).not.toMatch(/Unhandled|EPIPE|at .*\.js/);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    const status = await run(['status', '--db', db, '--json'], s.url, { keep: Number.POSITIVE_INFINITY });
    const streams = JSON.parse(status.stdout).streams as Array<{ records: number }>;
    expect(streams.reduce((n, x) => n + Number(x.records), 0)).toBe(60);
  });

  it('watch | head -1: watch stops after the reader goes, exit 0', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const r = await run(['watch', '--db', join(tempDir(), 'm.db'), '--interval', '1s', '--max-cycles', '30'], s.url, { keep: 1 });
    expect(r.stdout).toMatch(/pass 1:/);
    expect(r.stderr).not.toMatch(/Unhandled|EPIPE/);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    // Stopped at its next line, not after its 30 passes.
    expect(r.ms).toBeLessThan(15_000);
  });

  it.skipIf(!haveFull && !process.env.CI).each([
    ['pull', ['pull', '--db', 'DB']],
    ['status', ['status', '--db', 'DB']],
    ['campaigns --json', ['campaigns', '--db', 'DB', '--json']],
    ['completion bash', ['completion', 'bash']],
  ])('%s > /dev/full: exit 74 with one line', async (_, args) => {
    const s = await sim({ campaigns: 1, records: 5 });
    const db = join(tempDir(), 'm.db');
    if (args.includes('status')) await run(['pull', '--db', db], s.url, { keep: Number.POSITIVE_INFINITY });
    const r = await run(
      args.map((a) => (a === 'DB' ? db : a)),
      s.url,
      'full',
    );
    expect(r.stderr).toBe('campaign-sync: cannot write stdout: ENOSPC: no space left on device, write\n');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 74, signal: null });
  });

  // A table small enough for one chunk: its ENOSPC arrives only when the output is flushed at the
  // end, which must still be exit 74, in every format, as for a large table.
  it.skipIf(!haveFull && !process.env.CI)('export > /dev/full of a small table: exit 74 in every format', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const db = join(tempDir(), 'm.db');
    await run(['pull', '--db', db], s.url, { keep: Number.POSITIVE_INFINITY });
    for (const format of ['ndjson', 'csv', 'parquet']) {
      for (const table of ['campaigns', 'session-results']) {
        const r = await run(['export', '--db', db, '--table', table, '--format', format], s.url, 'full');
        expect(r.stderr, `${format} ${table}`).toMatch(
          /^campaign-sync: cannot write stdout: no space left on the device \(ENOSPC\)[^\n]*\n$/,
        );
        expect({ code: r.code, signal: r.signal }, `${format} ${table}`).toEqual({ code: 74, signal: null });
      }
    }
  });
});
