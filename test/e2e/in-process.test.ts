/**
 * The in-process runner of the component tests (test/helpers/run-cli.ts) against the spawned CLI:
 * for the same commands, the same exit codes, stdout and stderr (times and folders aside).
 */
import { expect, it } from 'vitest';
import { cli, sim, tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';

it('runCli and the spawned CLI print the same and exit the same', async () => {
  const s = await sim({ campaigns: 2, records: 30 });
  const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
  const cases = (d: string) => [
    ['pull', '--db', `${d}/a.db`],
    ['status', '--db', `${d}/a.db`],
    ['status', '--db', `${d}/a.db`, '--json'],
    ['pull', '--bogus'],
    ['--version'],
    ['--help'],
    ['export', '--db', `${d}/a.db`, '--table', 'campaigns'],
    ['campaigns', '--db', `${d}/b.db`, '--json'],
    ['reset', '--db', `${d}/a.db`],
    ['completion', 'bash'],
    ['forget', '--db', `${d}/a.db`, '--user', 'nobody@example.com', '--json'],
  ];
  const spawned = tempDir();
  const inProcess = tempDir();
  const norm = (text: string, dir: string) =>
    text
      .split(dir)
      .join('DIR')
      .replace(/\d+(\.\d+)?\s?(ms|s)\b/g, 'TIME')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'DATE');
  const a = cases(spawned);
  const b = cases(inProcess);
  for (const [i, args] of a.entries()) {
    const want = await cli(args, { env });
    const got = await runCli(b[i] as string[], { env });
    expect({ code: got.code, stdout: norm(got.stdout, inProcess), stderr: norm(got.stderr, inProcess) }, args.join(' ')).toEqual({
      code: want.code,
      stdout: norm(want.stdout, spawned),
      stderr: norm(want.stderr, spawned),
    });
  }
});
