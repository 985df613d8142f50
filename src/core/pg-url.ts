/**
 * PostgreSQL connection URLs read as text, with no driver: whether a --db value is one, where in it a
 * password may sit (the URL's user part, a `password=` or `sslpassword=` query parameter), and where
 * it connects and whether over TLS (the rule: off this machine, encrypted or explicitly not).
 * config/ decides the backend, refuses plaintext off loopback and warns of a password in plain sight
 * with them; store/pg/ keeps the password out of every message and connects where the rule looked.
 */

import { isLoopbackHost } from './loopback.js';

/** Whether `db` (a --db value) names a PostgreSQL database rather than a SQLite file. */
export function isPgUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** Stands in for the empty host of the Unix-socket form `postgresql://user@/db?host=/run/postgresql`. */
const NO_HOST = '___no_host___';

/** A PostgreSQL URL as pg-connection-string reads it. */
export interface ParsedPgUrl {
  /** The URL; the Unix-socket form has a stand-in host here. */
  readonly url: URL;
  /** `url` written out again (after any change to it), without the stand-in host. */
  text(): string;
}

/**
 * The URL as pg-connection-string reads it: WHATWG `new URL` refuses a user with an empty host (the
 * Unix-socket form), which pg accepts by parsing it again with a stand-in host. Undefined if unparseable.
 */
export function parsePgUrl(text: string): ParsedPgUrl | undefined {
  try {
    const url = new URL(text);
    return { url, text: () => url.toString() };
  } catch {}
  try {
    const url = new URL(text.replace('@/', `@${NO_HOST}/`));
    return { url, text: () => url.toString().replace(NO_HOST, '') };
  } catch {
    return undefined;
  }
}

/** Every spelling of the URL's passwords (user part, `password=`, `sslpassword=`): raw and decoded, longest first. */
export function pgUrlPasswords(text: string): string[] {
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
  for (const m of text.matchAll(/[?&](?:ssl)?password=([^&#]*)/gi)) add(m[1]);
  const parsed = parsePgUrl(text);
  if (parsed) {
    add(parsed.url.password);
    for (const [k, v] of parsed.url.searchParams) if (/^(ssl)?password$/i.test(k)) out.add(v);
  } else {
    // Unparseable: whatever follows the first `:` of what precedes the last `@`.
    const m = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/is.exec(text);
    const user = m?.[1] ?? '';
    if (user.includes(':')) add(user.slice(user.indexOf(':') + 1));
  }
  return [...out].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

/** Whether the URL itself carries a password (user part, `password=`, `sslpassword=`), rather than PGPASSWORD or ~/.pgpass. */
export function hasPassword(text: string): boolean {
  return pgUrlPasswords(text).length > 0;
}

/** The URL's query parameters as pg reads them: the last of a repeated name wins. */
function pgParams(url: URL): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of url.searchParams) out.set(k, v);
  return out;
}

/** The sslmode values under which the driver insists on TLS and never falls back to plaintext. */
const ENCRYPTED_MODES = new Set(['require', 'verify-ca', 'verify-full', 'no-verify']);

/** What the driver is asked to do about TLS: which connection it makes, and who said so. */
export interface PgTls {
  /**
   * TLS is certain: the driver insists on it (it fails rather than talk plaintext), and by a mode that
   * means it (not prefer or allow, which pg 8 treats as verify-full but libpq, and pg 9, let fall back).
   */
  required: boolean;
  /** The sslmode in effect, if any: the URL's, else PGSSLMODE's (read only when the URL says nothing of TLS). */
  mode: string | undefined;
  /** Who decided: the URL (sslmode, ssl, sslcert, …), PGSSLMODE, or nobody (plaintext by default). */
  from: 'url' | 'PGSSLMODE' | 'default';
  /** For the driver when the URL says nothing of TLS: PGSSLMODE's answer, so that pg never reads the variable itself. */
  driverSsl?: boolean | { rejectUnauthorized: false };
}

/** Where a PostgreSQL URL connects, as pg 8 reads it (pg-connection-string, then PG* variables). */
export interface PgTransport {
  /** The host: a name, an address, or the folder of a Unix socket. */
  host: string;
  /** Where the host came from: the URL, its `host=` parameter, PGHOST, or pg's default (localhost). */
  hostFrom: 'url' | 'host=' | 'PGHOST' | 'default';
  /** A Unix socket or a loopback address: the connection never leaves this machine. */
  local: boolean;
  tls: PgTls;
}

/**
 * Where `text` (a postgres:// URL) connects and whether pg will insist on TLS, as pg 8 decides it:
 * the `host=` parameter, else the URL's host, else PGHOST, else localhost; TLS from the URL's `ssl`,
 * `sslmode`, `sslcert`, `sslkey`, `sslrootcert` or `sslnegotiation=direct` (`sslmode=disable` wins),
 * else from PGSSLMODE. `offLoopback` names hosts taken for other machines though they are loopback
 * (core/io.ts: tests only). Undefined for a URL no driver can read.
 */
export function pgTransport(text: string, env: NodeJS.ProcessEnv, offLoopback: readonly string[] = []): PgTransport | undefined {
  const parsed = parsePgUrl(text);
  if (parsed === undefined) return undefined;
  const { url } = parsed;
  const params = pgParams(url);
  const hostname = url.hostname === NO_HOST ? '' : url.hostname.replace(/^\[(.+)\]$/, '$1');
  let decoded = hostname;
  try {
    decoded = decodeURIComponent(hostname);
  } catch {}
  const [host, hostFrom]: [string, PgTransport['hostFrom']] = params.get('host')
    ? [params.get('host') as string, 'host=']
    : decoded
      ? [decoded, 'url']
      : env.PGHOST
        ? [env.PGHOST, 'PGHOST']
        : ['localhost', 'default'];
  const local = host.startsWith('/') || (isLoopbackHost(host) && !offLoopback.includes(host));
  return { host, hostFrom, local, tls: pgTls(params, env) };
}

/** pg-connection-string's reading of the TLS parameters, then pg's of PGSSLMODE when the URL has none. */
function pgTls(params: Map<string, string>, env: NodeJS.ProcessEnv): PgTls {
  const mode = params.get('sslmode') || undefined;
  let ssl: unknown;
  if (params.has('ssl')) {
    const v = params.get('ssl');
    ssl = v === 'true' || v === '1' ? true : v === '0' ? false : v;
  }
  if (['sslcert', 'sslkey', 'sslrootcert', 'sslmode'].some((k) => params.get(k))) ssl = {};
  if (params.get('sslnegotiation') === 'direct' && ssl === undefined) ssl = true;
  if (mode === 'disable') ssl = false;
  if (ssl !== undefined) return { required: Boolean(ssl) && (mode === undefined || ENCRYPTED_MODES.has(mode)), mode, from: 'url' };
  const envMode = env.PGSSLMODE || undefined;
  return {
    required: envMode !== undefined && ENCRYPTED_MODES.has(envMode),
    mode: envMode,
    from: envMode === undefined ? 'default' : 'PGSSLMODE',
    driverSsl: envMode === 'no-verify' ? { rejectUnauthorized: false } : envMode !== undefined && PG_ENV_TLS.has(envMode),
  };
}

/** The PGSSLMODE values pg turns TLS on for (no-verify too, without checking the certificate). */
const PG_ENV_TLS = new Set(['prefer', 'require', 'verify-ca', 'verify-full']);

/**
 * The TLS rule: a connection off this machine must be encrypted. A refusal (one line: the host, where
 * it came from, why, what to write) when it would not be, unless the URL itself says
 * `sslmode=disable`; then `warning` says so, once per run. Nothing for a local connection.
 */
export function pgTlsVerdict(t: PgTransport, where: string): { refusal?: string; warning?: string } {
  if (t.local || t.tls.required) return {};
  const host = t.hostFrom === 'PGHOST' ? `PGHOST ${t.host}` : t.hostFrom === 'default' ? t.host : `host ${t.host}`;
  if (t.tls.from === 'url' && t.tls.mode === 'disable') {
    return {
      warning: `${where}: sslmode=disable: the connection to ${host} is not encrypted, so the password and every candidate's e-mail cross the network readable; use sslmode=verify-full (or require) once the server has a certificate`,
    };
  }
  const why =
    t.tls.mode === 'prefer' || t.tls.mode === 'allow'
      ? `sslmode=${t.tls.mode}${t.tls.from === 'PGSSLMODE' ? ' (PGSSLMODE)' : ''} lets the connection fall back to plaintext`
      : t.tls.from === 'PGSSLMODE'
        ? `PGSSLMODE=${t.tls.mode} does not encrypt it, and only the URL may say sslmode=disable`
        : t.tls.from === 'url'
          ? 'the URL does not ask for TLS with an sslmode'
          : 'nothing asks for TLS';
  return {
    refusal: `${where}: PostgreSQL at ${host} is not on this machine and the connection would not be encrypted (${why}); add sslmode=verify-full (or require, verify-ca) to the URL, or sslmode=disable to send it in plaintext on a network you trust`,
  };
}
