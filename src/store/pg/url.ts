/**
 * PostgreSQL connection URLs: `--db postgres://…` or `postgresql://…` selects the team
 * mirror. The password (from the URL's user part or a `password=` query parameter, PGPASSWORD or
 * ~/.pgpass, which `pg` reads) is never printed: every message names the database by `redactUrl`.
 */

import { currentIo } from '../../core/io.js';
import { UsageError } from '../../errors.js';

/** Whether `db` (a --db value) names a PostgreSQL database rather than a SQLite file. */
export function isPgUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** Stands in for the empty host of the Unix-socket form `postgresql://user@/db?host=/run/postgresql`. */
const NO_HOST = '___no_host___';

/**
 * The URL as pg-connection-string reads it: WHATWG `new URL` refuses a user with an empty host (the
 * Unix-socket form), which pg accepts by parsing it again with a stand-in host. Undefined if unparseable.
 */
function parsePg(url: string): { u: URL; noHost: boolean } | undefined {
  try {
    return { u: new URL(url), noHost: false };
  } catch {}
  try {
    return { u: new URL(url.replace('@/', `@${NO_HOST}/`)), noHost: true };
  } catch {
    return undefined;
  }
}

/** The URL without its password (and without query parameters, which may carry one too), in every form. */
export function redactUrl(url: string): string {
  const parsed = parsePg(url);
  if (parsed) {
    const { u, noHost } = parsed;
    u.password = '';
    u.search = '';
    u.hash = '';
    const text = u.toString();
    return noHost ? text.replace(NO_HOST, '') : text;
  }
  // Not parseable: drop everything up to the last `@` (a password may hold `/`, `?` or `#`), then
  // the query and fragment.
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is.exec(url);
  if (!m) return url.replace(/[?#].*$/s, '');
  const rest = m[2] as string;
  return `${m[1]}${rest.slice(rest.lastIndexOf('@') + 1).replace(/[?#].*$/s, '')}`;
}

/** Every spelling of the URL's passwords (user part, `password=`, `sslpassword=`): raw and decoded. */
function secrets(url: string): string[] {
  const out = new Set<string>();
  const add = (raw: string | undefined) => {
    if (!raw) return;
    out.add(raw);
    for (const form of [raw, raw.replace(/\+/g, ' ')]) {
      try {
        out.add(decodeURIComponent(form));
      } catch {}
    }
  };
  for (const m of url.matchAll(/[?&](?:ssl)?password=([^&#]*)/gi)) add(m[1]);
  const parsed = parsePg(url);
  if (parsed) {
    add(parsed.u.password);
    for (const [k, v] of parsed.u.searchParams) if (/^(ssl)?password$/i.test(k)) out.add(v);
  } else {
    // Unparseable: whatever follows the first `:` of what precedes the last `@`.
    const m = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/is.exec(url);
    const user = m?.[1] ?? '';
    if (user.includes(':')) add(user.slice(user.indexOf(':') + 1));
  }
  return [...out].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

/** Whether the URL itself carries a password (user part, `password=`, `sslpassword=`), rather than PGPASSWORD or ~/.pgpass. */
export function hasPassword(url: string): boolean {
  return secrets(url).length > 0;
}

/** A database as config/env.ts resolves it (DbChoice): the value, where it came from, and the profile's file mode. */
export interface DbSource {
  path: string;
  where: string;
  origin?: { where: string; mode: number } | undefined;
}

/**
 * What a command should say, before it opens anything, about a PostgreSQL password in plain sight of
 * other users of the machine: on the command line (every local user reads it in `ps`), or in a
 * profile of a config file that group or others can read. The password is still used, as a key file
 * others can read is (config/config.ts), and the warning never holds it. None for SQLite, a URL
 * without a password, or CAMPAIGN_SYNC_DB (a process's environment is readable by its user alone).
 */
export function dbWarnings(db: DbSource): string[] {
  if (!isPgUrl(db.path) || !hasPassword(db.path)) return [];
  if (db.origin === undefined) {
    if (db.where !== '--db') return [];
    return [
      '--db: the URL holds a password, which every local user can read in the process list (ps); give the password in PGPASSWORD or ~/.pgpass, or the whole URL in CAMPAIGN_SYNC_DB or a 0600 config profile',
    ];
  }
  const { where, mode } = db.origin;
  if ((mode & 0o044) === 0) return [];
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return [
    `${where} holds a password and the file is readable by others (mode ${octal}); chmod 600 it, or give the password in PGPASSWORD or ~/.pgpass`,
  ];
}

/** `message` with every occurrence of the password removed (a driver may quote its input). */
export function withoutSecrets(message: string, url: string): string {
  let out = message.split(url).join(redactUrl(url));
  for (const secret of secrets(url)) out = out.split(secret).join('***');
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
  if (parsePg(url)) return;
  throw new UsageError(
    `${where}: ${redactUrl(url)} is not a valid PostgreSQL URL (postgres://user@host:port/database, a port from 1 to 65535, an IPv6 host in [ ])`,
  );
}
