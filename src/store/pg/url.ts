/**
 * PostgreSQL connection URLs: `--db postgres://…` or `postgresql://…` selects the team
 * mirror. The password (from the URL's user part or a `password=` query parameter, PGPASSWORD or
 * ~/.pgpass, which `pg` reads) is never printed: every message names the database by `redactUrl`.
 * Reading the URL as text (is it one, where may a password sit) is core/pg-url.ts's.
 */

import { currentIo } from '../../core/io.js';
import { parsePgUrl, pgUrlPasswords } from '../../core/pg-url.js';
import { UsageError } from '../../errors.js';

/** The URL without its password (and without query parameters, which may carry one too), in every form. */
export function redactUrl(url: string): string {
  const parsed = parsePgUrl(url);
  if (parsed) {
    const { url: u } = parsed;
    u.password = '';
    u.search = '';
    u.hash = '';
    return parsed.text();
  }
  // Not parseable: drop everything up to the last `@` (a password may hold `/`, `?` or `#`), then
  // the query and fragment.
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is.exec(url);
  if (!m) return url.replace(/[?#].*$/s, '');
  const rest = m[2] as string;
  return `${m[1]}${rest.slice(rest.lastIndexOf('@') + 1).replace(/[?#].*$/s, '')}`;
}

/** `message` with every occurrence of the password removed (a driver may quote its input). */
export function withoutSecrets(message: string, url: string): string {
  let out = message.split(url).join(redactUrl(url));
  for (const secret of pgUrlPasswords(url)) out = out.split(secret).join('***');
  const env = currentIo().env.PGPASSWORD;
  if (env) out = out.split(env).join('***');
  return out;
}

/**
 * A --db URL that no driver can read (a port past 65535, an unclosed `[`) is the user's slip: a usage
 * error (exit 2) naming where it came from (`where`: --db, CAMPAIGN_SYNC_DB or a profile's key) and
 * the URL without its password, not a storage failure (74).
 */
export function checkPgUrl(url: string, where = '--db'): void {
  if (parsePgUrl(url)) return;
  throw new UsageError(
    `${where}: ${redactUrl(url)} is not a valid PostgreSQL URL (postgres://user@host:port/database, a port from 1 to 65535, an IPv6 host in [ ])`,
  );
}

/** What the driver is handed: the URL, and its server options. */
export interface PgDriverInput {
  connectionString: string;
  /** The URL's `options=` (server settings), which the driver would let replace ours entirely. */
  options?: string;
}

/**
 * The driver's input for `url`: its `options` are taken out, to go before ours (database.ts), since
 * pg lets a URL's replace the ones it is given.
 */
export function driverInput(url: string): PgDriverInput {
  const parsed = parsePgUrl(url);
  const options = parsed?.url.searchParams.getAll('options').at(-1);
  if (parsed === undefined || options === undefined) return { connectionString: url };
  parsed.url.searchParams.delete('options');
  return { connectionString: parsed.text(), ...(options ? { options } : {}) };
}
