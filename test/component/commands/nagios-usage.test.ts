/**
 * `status --check --nagios` is a Nagios plugin whatever goes wrong: every usage error (an unknown
 * option, a missing or bad value, a missing config file or profile) is one `CAMPAIGN-SYNC UNKNOWN -
 * <reason>` line on stdout and exit 3, with nothing on stderr. Nagios shows stdout only, and reads
 * exit 2 as CRITICAL. Without --nagios the same mistakes are usage errors as ever (exit 2, stderr).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

/** An existing mirror, so that only the flags are at fault. */
function mirror(): string {
  const db = join(tempDir(), 'm.db');
  openDatabase(db).close();
  return db;
}

describe('status --check --nagios: a usage error is UNKNOWN', () => {
  it.each([
    [['--bogus'], /^unknown option '--bogus' \(add --help for usage\)$/],
    [['--max-age'], /^option '--max-age <duration>' argument missing/],
    [['--max-age', 'soon'], /^--max-age: "soon" is not a duration/],
    [['--config', '/nonexistent/campaign-sync.toml'], /^--config: \/nonexistent\/campaign-sync\.toml does not exist$/],
    [['--profile', 'nosuch'], /^--profile nosuch: /],
    [['extra-argument'], /too many arguments|unknown command|argument/],
  ])('status --check --nagios %j: exit 3, one UNKNOWN line on stdout, nothing on stderr', async (args, reason) => {
    const db = mirror();
    const r = await runCli(['status', '--db', db, '--check', '--nagios', ...args], { cwd: tempDir() });
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toBe('');
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^CAMPAIGN-SYNC UNKNOWN - /);
    expect((lines[0] as string).replace(/^CAMPAIGN-SYNC UNKNOWN - /, '')).toMatch(reason);
  });

  it('a flag before --nagios is judged the same; the order of flags does not matter', async () => {
    const r = await runCli(['status', '--bogus', '--check', '--nagios', '--db', mirror()]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^CAMPAIGN-SYNC UNKNOWN - unknown option '--bogus'/);
  });

  it('without --nagios the same mistake is a usage error: exit 2, one line on stderr, stdout empty', async () => {
    const r = await runCli(['status', '--db', mirror(), '--check', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("campaign-sync: unknown option '--bogus' (add --help for usage)\n");
  });

  it('--help is help, not a check: exit 0, the help on stdout', async () => {
    const r = await runCli(['status', '--check', '--nagios', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: campaign-sync status/);
  });
});
