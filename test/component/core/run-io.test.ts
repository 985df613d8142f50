/**
 * run(argv, io) (src/main.ts): a command writes to the streams and reads the environment it is
 * handed, never the process's, so a test runs it in-process (test/helpers/run-cli.ts).
 */
import { PassThrough } from 'node:stream';
import { expect, it, vi } from 'vitest';
import { run } from '../../../src/main.js';
import { tempDir } from '../../helpers/index.js';

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}

it('a command prints on the given stdout and stderr and reads the given environment', async () => {
  const processOut = vi.spyOn(process.stdout, 'write');
  const processErr = vi.spyOn(process.stderr, 'write');
  try {
    const dir = tempDir();
    const stdout = capture();
    const stderr = capture();
    const env = { CAMPAIGN_SYNC_DB: `${dir}/from-env.db`, XDG_STATE_HOME: dir };
    const stdin = new PassThrough();
    stdin.end();
    const io = { stdout: stdout.stream, stderr: stderr.stream, stdin, env };
    // The database CAMPAIGN_SYNC_DB of the given environment names, not of the process's.
    expect(await run(['node', 'campaign-sync', 'status', '--json'], io)).toBe(2);
    expect(JSON.parse(stdout.text()).error).toContain(`no database at ${dir}/from-env.db`);
    expect(await run(['node', 'campaign-sync', 'status', '--bogus'], io)).toBe(2);
    expect(stderr.text()).toBe(
      `campaign-sync: no database at ${dir}/from-env.db (run \`campaign-sync pull\` first, or pass --db)\n` +
        "campaign-sync: unknown option '--bogus' (add --help for usage)\n",
    );
    expect(processOut).not.toHaveBeenCalled();
    expect(processErr).not.toHaveBeenCalled();
  } finally {
    processOut.mockRestore();
    processErr.mockRestore();
  }
});
