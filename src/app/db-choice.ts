/**
 * The database a command uses (config/env.ts resolveDb), and a warning wherever its PostgreSQL
 * password sits in plain sight of other users of the machine: on the command line (every local user
 * reads it in `ps`), or in a config file that group or others can read. The password is still used,
 * as ssh uses a key file it warns about, and the warning never holds it.
 */
import { type DbChoice, type DbFlags, resolveDb } from '../config/env.js';
import { hasPassword, isPgUrl } from '../store/pg/url.js';

/** What a command should say about where the database's password is kept; none for SQLite or no password. */
export function dbWarnings(choice: DbChoice): string[] {
  if (!isPgUrl(choice.path) || !hasPassword(choice.path)) return [];
  const { origin } = choice;
  if (origin === undefined) {
    // CAMPAIGN_SYNC_DB is fine: a process's environment is readable by its user alone (/proc/PID/environ is 0400).
    if (choice.where !== '--db') return [];
    return [
      '--db: the URL holds a password, which every local user can read in the process list (ps); give the password in PGPASSWORD or ~/.pgpass, or the whole URL in CAMPAIGN_SYNC_DB or a 0600 config profile',
    ];
  }
  if ((origin.mode & 0o044) === 0) return [];
  const octal = (origin.mode & 0o777).toString(8).padStart(4, '0');
  return [
    `${origin.where} holds a password and the file is readable by others (mode ${octal}); chmod 600 it, or give the password in PGPASSWORD or ~/.pgpass`,
  ];
}

/** resolveDb, with dbWarnings given to `warn` (the command's Output.warn: silent with --quiet) before anything is opened. */
export function chooseDb(flags: DbFlags, warn: ((text: string) => void) | undefined): DbChoice {
  const choice = resolveDb(flags);
  for (const w of dbWarnings(choice)) warn?.(w);
  return choice;
}
