import { currentIo } from '../core/io.js';
import { isLoopbackHost } from '../core/loopback.js';
import { hasPassword, isPgUrl, pgTlsVerdict, pgTransport } from '../core/pg-url.js';
import type { Rate } from '../core/rate.js';
import { UsageError } from '../errors.js';
import { readRegularFile } from './read-file.js';
import { apiSchema, DEFAULTS, parseGiven, type Setting } from './schema.js';
import { byDefault, type Given, type Inputs, type Origin, type Profile, pick } from './sources.js';

/** Options shared by every command that calls the API (the raw strings commander gives us). */
export interface ApiFlags {
  baseUrl?: string;
  apiKeyFile?: string;
  rateLimit?: string;
  timeout?: string;
  maxRetries?: string;
  maxRetryWait?: string;
  compression?: string;
  allowInsecureHttp?: boolean;
}

/** What the API client needs, validated once. */
export interface ApiConfig {
  baseUrl: URL;
  /** What set the base URL (`--base-url`, CAMPAIGN_SYNC_BASE_URL, a profile's key): what an error about it says to check. */
  baseUrlWhere?: string;
  apiKey: string;
  rate: Rate;
  timeoutMs: number;
  maxRetries: number;
  /** For the command to print once (Output.warn): e.g. a key file others can read. Never holds the key. */
  warnings?: string[];
  /** Longest Retry-After honoured (--max-retry-wait); a longer one fails the request at once. Unset: the default. */
  maxRetryWaitMs: number;
  /** Ask for gzip bodies: --compression gzip, or auto to any host but loopback (where inflating costs more CPU than it saves). */
  gzip?: boolean;
}

/**
 * Parses --base-url (http or https, no credentials, no query): its first problem is a UsageError
 * naming `where` (the flag, CAMPAIGN_SYNC_BASE_URL, or a profile's file and key). Plain checks, no
 * zod at start.
 */
export function parseBaseUrl(text: string, where = '--base-url'): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // Named without any user name and password it carries: they are secrets even when misspelled.
    const shown = text.replace(/\/\/[^/?#]*@/, '//…@');
    throw new UsageError(`${where}: "${shown}" is not a URL (example: https://api.example.com)`);
  }
  const problem =
    url.protocol !== 'http:' && url.protocol !== 'https:'
      ? 'must start with http:// or https://'
      : url.username || url.password
        ? 'must not carry a user name or password'
        : url.search || url.hash
          ? 'must not carry a query or fragment'
          : undefined;
  if (problem) throw new UsageError(`${where}: ${problem}`);
  // An empty one (a trailing `?` or `#`, a paste's leftover) is dropped: URL keeps it in `href`, which
  // made it another service to the request budget's ledger, and the two spellings drew 429s.
  url.search = '';
  url.hash = '';
  return url;
}

/** Validates the base URL: http(s), no credentials; plain http only to loopback unless allowed. */
export function resolveBaseUrl(text: string, allowInsecureHttp: boolean, where = '--base-url'): URL {
  const url = parseBaseUrl(text, where);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecureHttp) {
    throw new UsageError(
      `${where}: plain http:// to ${url.hostname} would send the API key unencrypted; use https:// or pass --allow-insecure-http`,
    );
  }
  // The spec's {base_url} excludes /v1; accept it with or without, and with a trailing slash.
  url.pathname = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return url;
}

/**
 * The service a base URL names, as a mirror records it (store/model/service.ts): scheme and host in
 * lower case, no default port (URL's own normal form), no user name or password, no trailing slash
 * nor trailing `/v1` (the spec's {base_url} excludes it). `HTTPS://API.Example.com:443/v1/` and
 * `https://api.example.com` are one service.
 */
export function serviceUrl(url: URL): string {
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '').replace(/\/+$/, '');
  return `${url.protocol}//${url.host}${path}`;
}

/** A key file holds one line; anything this big is not one. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/**
 * Reads the key alone from its file. A file that group or others may open is used, with a warning
 * (as ssh does with a private key): the key itself is never part of it.
 */
function readKeyFile(path: string): { key: string; warnings: string[] } {
  const read = readRegularFile(path, MAX_KEY_FILE_BYTES);
  // A pipe, a device or a folder holds no key.
  if ('kind' in read) {
    if (read.kind === 'not-regular') throw new UsageError(`--api-key-file: ${path} is not a regular file`);
    if (read.kind === 'too-big') throw new UsageError(`--api-key-file: ${path} is ${read.size} bytes, too big for a key file`);
    throw new UsageError(`--api-key-file: cannot read ${path} (${read.code})`);
  }
  const { mode } = read;
  const key = read.bytes.toString('utf8').trim();
  if (!key) throw new UsageError(`--api-key-file: ${path} is empty`);
  if (/\s/.test(key)) throw new UsageError(`--api-key-file: ${path} must hold the key alone on one line`);
  checkKey(key, `--api-key-file: ${path}`);
  const open = mode & 0o077;
  if (open === 0) return { key, warnings: [] };
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return { key, warnings: [`${path} is ${open & 0o044 ? 'readable' : 'open'} by others (mode ${octal}); chmod 600 it`] };
}

/**
 * A key is sent as `Authorization: Bearer <key>`: one with a space, a control character or a
 * non-ASCII character cannot be (undici refused it on every attempt, and the run ended as if the
 * service were down, exit 5). A usage error instead, naming where the key came from and the
 * character, never the key. The simulator's --api-key is held to the same rule, so a pull can reach it.
 */
export function checkKey(key: string, where: string): void {
  const bad = /[^\x21-\x7e]/.exec(key);
  if (bad === null) return;
  const code = (bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
  throw new UsageError(
    `${where}: the key holds a character an HTTP header cannot carry (U+${code} at position ${bad.index + 1}); the key is printable ASCII with no spaces`,
  );
}

/** The API settings and the origin of each (config/sources.ts). */
export interface ResolvedApi {
  config: ApiConfig;
  origins: Record<string, Origin>;
}

/**
 * The API settings from flags, environment and profile (flags beat environment beat profile); a
 * missing base URL or key is a usage error that says what to set, and a bad value is named where it
 * was written.
 */
export function resolveApi(inputs: Inputs): ResolvedApi {
  const base = pick('baseUrl', inputs);
  // CAMPAIGN_SYNC_API_KEY holds the key itself; a flag or a profile names a file.
  const keyGiven = pick('apiKeyFile', inputs);
  const fromFile = keyGiven !== undefined && keyGiven.origin.source !== 'env' ? readKeyFile(keyGiven.text) : undefined;
  const key = fromFile ? fromFile.key : keyGiven?.text.trim();
  const missing = [
    base === undefined ? '--base-url or CAMPAIGN_SYNC_BASE_URL' : undefined,
    key === undefined ? '--api-key-file or CAMPAIGN_SYNC_API_KEY' : undefined,
  ].filter(Boolean);
  if (base === undefined || key === undefined) {
    // With a key at hand the user has a real service in mind: the demo would be no answer.
    const hint = key === undefined ? ' (try `campaign-sync demo` to run without a key)' : '';
    throw new UsageError(`missing ${missing.join(' and ')}${hint}`);
  }
  if (fromFile === undefined) {
    if (key === '') throw new UsageError('CAMPAIGN_SYNC_API_KEY is empty');
    checkKey(key, 'CAMPAIGN_SYNC_API_KEY');
  }
  const origins: Record<string, Origin> = { baseUrl: base.origin, apiKeyFile: (keyGiven as Given).origin };
  const value = <T>(option: keyof typeof apiSchema, setting: Setting<T>): T => {
    const { value: v, origin } = parseGiven(setting, pick(option, inputs), option);
    origins[option] = origin;
    return v;
  };
  const rate = value('rateLimit', apiSchema.rateLimit);
  const timeoutMs = value('timeout', apiSchema.timeout);
  const maxRetries = value('maxRetries', apiSchema.maxRetries);
  const maxRetryWaitMs = value('maxRetryWait', apiSchema.maxRetryWait);
  const compression = value('compression', apiSchema.compression);
  const baseUrl = resolveBaseUrl(base.text, inputs.flags.allowInsecureHttp === true, base.origin.name);
  return {
    config: {
      baseUrl,
      baseUrlWhere: base.origin.name,
      apiKey: key,
      rate,
      timeoutMs,
      maxRetries,
      warnings: fromFile?.warnings ?? [],
      maxRetryWaitMs,
      gzip: compression === 'gzip' || (compression === 'auto' && !isLoopbackHost(baseUrl.hostname)),
    },
    origins,
  };
}

/** The API settings from flags and environment alone (no config file). */
export function resolveApiConfig(flags: ApiFlags, env: NodeJS.ProcessEnv = currentIo().env): ApiConfig {
  return resolveApi({ flags: flags as Record<string, unknown>, env }).config;
}

/** The database a command uses, and where its value came from. */
export interface DbChoice {
  path: string;
  /** What a message about the value names: `--db`, `CAMPAIGN_SYNC_DB`, or a profile's key. */
  where: string;
  /** Set when a profile gave it: its key and the config file's mode. */
  origin?: { where: string; mode: number } | undefined;
}

/** The database as a value and its origin: what messages and the password warnings (dbWarnings) need. */
export function dbChoice(path: string, origin: Origin): DbChoice {
  return origin.source === 'profile'
    ? { path, where: origin.name, origin: { where: origin.name, mode: origin.fileMode ?? 0o600 } }
    : { path, where: origin.name };
}

/** The backend a --db value names: a SQLite file, or a PostgreSQL team mirror (a postgres:// URL). */
export type DbKind = 'sqlite' | 'pg';

/** Which backend `path` names: decided here once, as the settings are built; app/factory.ts opens it. */
export function dbKindOf(path: string): DbKind {
  return isPgUrl(path) ? 'pg' : 'sqlite';
}

/**
 * What a command should say, before it opens anything, about a PostgreSQL connection: plaintext off
 * this machine that the URL asked for (refused when it did not: tlsWarnings), and a password in plain
 * sight (passwordWarnings). None for SQLite.
 */
export function dbWarnings(db: DbChoice): string[] {
  if (dbKindOf(db.path) !== 'pg') return [];
  return [...passwordWarnings(db), ...tlsWarnings(db)];
}

/**
 * The TLS rule (core/pg-url.ts pgTlsVerdict), decided before anything is opened: a PostgreSQL host
 * off this machine (the URL's, its host= parameter, or PGHOST) without TLS is a usage error naming
 * where the URL came from; with the URL's own sslmode=disable, a warning. Loopback and Unix sockets
 * are exempt. The environment is the run's (PGHOST, PGSSLMODE), as the driver is handed it
 * (store/pg/database.ts).
 */
function tlsWarnings(db: DbChoice): string[] {
  const io = currentIo();
  const transport = pgTransport(db.path, io.env, io.offLoopback);
  // A URL no driver can read: store/pg/url.ts checkPgUrl says so, naming it.
  if (transport === undefined) return [];
  const verdict = pgTlsVerdict(transport, db.where);
  if (verdict.refusal !== undefined) throw new UsageError(verdict.refusal);
  return verdict.warning === undefined ? [] : [verdict.warning];
}

/**
 * A PostgreSQL password in plain sight of other users of the machine: on the command line (every
 * local user reads it in `ps`), or in a profile of a config file that group or others can read. The
 * password is still used, as a key file others can read is (readKeyFile), and the warning never holds
 * it. None for a URL without a password, or CAMPAIGN_SYNC_DB (a process's environment is readable by
 * its user alone).
 */
function passwordWarnings(db: DbChoice): string[] {
  if (!hasPassword(db.path)) return [];
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

/**
 * The database from flags, environment and profile, else the default; a value is named by where it
 * came from: the user who set CAMPAIGN_SYNC_DB in a unit file a year ago never typed --db.
 */
export function resolveDb(flags: { db?: string | undefined }, env: NodeJS.ProcessEnv = currentIo().env, profile?: Profile): DbChoice {
  const given = pick('db', { flags, env, profile });
  return given === undefined ? dbChoice(DEFAULTS.db, byDefault('db')) : dbChoice(given.text, given.origin);
}

/** --pg-schema (PostgreSQL mirrors): a plain lower-case identifier, default campaign_sync; `where` names a bad one. */
export function resolvePgSchema(text: string | undefined, where = '--pg-schema'): string {
  const name = text ?? DEFAULTS.pgSchema;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new UsageError(`${where}: "${name}" is not a plain lower-case identifier (a-z, 0-9, _)`);
  return name;
}
