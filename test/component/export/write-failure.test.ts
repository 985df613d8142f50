/**
 * An export that cannot write its file says so in terms of the export: it commits nothing, so it
 * claims nothing about commits. A missing folder is named with how to make it (exit 74, a local
 * storage failure, as the exit codes page lists a missing folder); any other write failure says no
 * file was written and the mirror is unchanged.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';
import { sharedSim } from '../../helpers/shared-sim.js';

describe('export -o to a place it cannot write', () => {
  it('a missing folder: exit 74 naming the folder and how to create it; another failure: no file, the mirror unchanged', async () => {
    const s = await sharedSim({ records: 2 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    expect((await runCli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } })).code).toBe(0);
    mkdirSync(join(dir, 'out'));
    const missing = await runCli(['export', '--db', db, '--table', 'campaigns', '-o', 'out/no such dir/x.csv'], { cwd: dir });
    expect(missing.code).toBe(74);
    const folder = join(dir, 'out', 'no such dir');
    expect(missing.stderr).toBe(
      `campaign-sync: cannot write out/no such dir/x.csv: no such file or folder (ENOENT): the folder ${folder} does not exist; create it (mkdir -p '${folder}') or give -o a file in an existing folder\n`,
    );
    writeFileSync(join(dir, 'afile'), '');
    const notFolder = await runCli(['export', '--db', db, '--table', 'campaigns', '-o', 'afile/x.csv'], { cwd: dir });
    expect(notFolder.code).toBe(74);
    expect(notFolder.stderr).toBe(
      'campaign-sync: cannot write afile/x.csv: a part of the path is not a folder (ENOTDIR); no file was written at afile/x.csv and the mirror is unchanged: fix it and export again\n',
    );
    expect(missing.stderr + notFolder.stderr).not.toContain('committed');
  });
});
