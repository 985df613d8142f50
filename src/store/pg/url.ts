/**
 * PostgreSQL connection URLs: `--db postgres://…` or `postgresql://…` selects the team
 * mirror. The password (from the URL's user part or a `password=` query parameter, PGPASSWORD or
 * ~/.pgpass, which `pg` reads) is never printed: every message names the database by `redactUrl`.
 * A URL is checked (readable; encrypted off this machine) and handed to the driver so that it
 * connects where the check looked. Reading the URL as text (is it one, where may a password sit,
 * where it connects and over what) is core/pg-url.ts's.
 */

import { currentIo } from '../../core/io.js';
import { type PgTransport, parsePgUrl, pgTlsVerdict, pgTransport, pgUrlPasswords } from '../../core/pg-url.js';
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
 * the URL without its password, not a storage failure (74). So is one that would go off this machine
 * in plaintext without saying sslmode=disable (core/pg-url.ts pgTlsVerdict; the settings refused it
 * already, this holds for every caller). Returns where it connects.
 */
export function checkPgUrl(url: string, where = '--db'): PgTransport {
  const io = currentIo();
  const transport = pgTransport(url, io.env, io.offLoopback);
  if (transport === undefined) {
    throw new UsageError(
      `${where}: ${redactUrl(url)} is not a valid PostgreSQL URL (postgres://user@host:port/database, a port from 1 to 65535, an IPv6 host in [ ])`,
    );
  }
  const { refusal } = pgTlsVerdict(transport, where);
  if (refusal !== undefined) throw new UsageError(refusal);
  return transport;
}

/** What the driver is handed: the URL, and what of its own it would otherwise read from the process. */
export interface PgDriverInput {
  connectionString: string;
  /** TLS when the URL says nothing of it (PGSSLMODE's answer, or none): pg then never reads PGSSLMODE itself. */
  ssl?: boolean | { rejectUnauthorized: false };
  /** The URL's `options=` (server settings), which the driver would let replace ours entirely. */
  options?: string;
}

/**
 * The driver's input for `url`, connecting where `transport` says (the rule looked there): a host from
 * PGHOST or pg's default is written into the URL and TLS from PGSSLMODE given as `ssl`, so that pg,
 * which reads process.env, connects as the run's environment said; the URL's `options` are taken out,
 * to go before ours (database.ts), since pg lets a URL's replace the ones it is given.
 */
export function driverInput(url: string, transport: PgTransport): PgDriverInput {
  const parsed = parsePgUrl(url);
  const fromUrl = transport.hostFrom === 'url' || transport.hostFrom === 'host=';
  const options = parsed?.url.searchParams.getAll('options').at(-1);
  let connectionString = url;
  if (parsed !== undefined && (options !== undefined || !fromUrl)) {
    parsed.url.searchParams.delete('options');
    if (!fromUrl) parsed.url.searchParams.set('host', transport.host);
    connectionString = parsed.text();
  }
  return {
    connectionString,
    ...(transport.tls.from === 'url' ? {} : { ssl: transport.tls.driverSsl ?? false }),
    ...(options ? { options } : {}),
  };
}
