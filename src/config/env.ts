import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { currentIo } from '../core/io.js';
import { DEFAULTS } from './defaults.js';

/**
 * Every environment variable campaign-sync reads, in one list (flags beat all of them).
 * The README's configuration table is checked against this list by a test.
 */
export const ENV = {
  baseUrl: { name: 'CAMPAIGN_SYNC_BASE_URL', doc: 'API base URL, without /v1 (flag --base-url)' },
  apiKey: { name: 'CAMPAIGN_SYNC_API_KEY', doc: 'API key (flag --api-key-file reads it from a file)' },
  db: { name: 'CAMPAIGN_SYNC_DB', doc: 'SQLite database path or postgres:// URL (flag --db); default ./campaign-sync.db' },
  rateLimit: { name: 'CAMPAIGN_SYNC_RATE_LIMIT', doc: 'request budget such as 100/1m (flag --rate-limit)' },
  format: { name: 'CAMPAIGN_SYNC_FORMAT', doc: 'where pull and watch send records, sqlite or ndjson (flag --format)' },
  out: { name: 'CAMPAIGN_SYNC_OUT', doc: 'NDJSON folder (flag --out)' },
  profile: { name: 'CAMPAIGN_SYNC_PROFILE', doc: 'profile of the config file (flag --profile)' },
  xdgStateHome: {
    name: 'XDG_STATE_HOME',
    doc: 'where the request budget is shared across runs and processes: $XDG_STATE_HOME/campaign-sync/budget-slots.db (default ~/.local/state)',
  },
  xdgConfigHome: {
    name: 'XDG_CONFIG_HOME',
    doc: 'where the user config file is looked for: $XDG_CONFIG_HOME/campaign-sync/config.toml (default ~/.config)',
  },
  extraCaCerts: {
    name: 'NODE_EXTRA_CA_CERTS',
    doc: "Node's own: a PEM file of extra trusted CA certificates; read by Node at start-up, checked by campaign-sync (a warning when unusable)",
  },
  ci: { name: 'CI', doc: 'when set, no spinners' },
  noColor: { name: 'NO_COLOR', doc: 'when set, no colours' },
} as const;

export type EnvKey = keyof typeof ENV;

/** Reads one variable; an empty value counts as unset. */
export function readEnv(key: EnvKey, env: NodeJS.ProcessEnv = currentIo().env): string | undefined {
  const value = env[ENV[key].name];
  return value === undefined || value === '' ? undefined : value;
}

/** The user's state folder for campaign-sync (the request budget's ledger). */
export function stateDir(env: NodeJS.ProcessEnv = currentIo().env): string {
  return join(xdgHome('xdgStateHome', env) ?? join(homedir(), '.local', 'state'), 'campaign-sync');
}

/** An XDG base folder from the environment: a relative one is invalid and ignored, as the XDG spec says. */
export function xdgHome(key: 'xdgStateHome' | 'xdgConfigHome', env: NodeJS.ProcessEnv = currentIo().env): string | undefined {
  const value = readEnv(key, env);
  return value !== undefined && isAbsolute(value) ? value : undefined;
}

/** A config file's profile that filled --db (config/profile.ts): its key, for messages, and the file's mode. */
export interface DbOrigin {
  /** `<file>: profiles.<name>.db`. */
  where: string;
  file: string;
  mode: number;
}

/** The options a config profile filled (config/profile.ts), each with its key (`<file>: profiles.<name>.<key>`), for messages to name. */
export interface ProfileFilled {
  fromProfile?: Record<string, string> | undefined;
}

/** The options that choose the database: --db, and what filled it when a profile did. */
export interface DbFlags {
  db?: string | undefined;
  dbFrom?: DbOrigin | undefined;
}

/** The database a command uses, and where its value came from. */
export interface DbChoice {
  path: string;
  /** What a message about the value names: `--db`, `CAMPAIGN_SYNC_DB`, or a profile's key. */
  where: string;
  /** Set when a profile gave it. */
  origin?: DbOrigin;
}

/**
 * The database: flag (or the profile that filled it), then CAMPAIGN_SYNC_DB, then the default (here,
 * not in config.ts: `status` loads no zod). A value is named by where it came from: the user who set
 * CAMPAIGN_SYNC_DB in a unit file a year ago never typed --db.
 */
export function resolveDb(flags: DbFlags, env: NodeJS.ProcessEnv = currentIo().env): DbChoice {
  if (flags.db !== undefined) {
    return flags.dbFrom === undefined
      ? { path: flags.db, where: '--db' }
      : { path: flags.db, where: flags.dbFrom.where, origin: flags.dbFrom };
  }
  const fromEnv = readEnv('db', env);
  return fromEnv === undefined ? { path: DEFAULTS.db, where: '--db' } : { path: fromEnv, where: ENV.db.name };
}
