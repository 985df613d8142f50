import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { currentIo } from '../core/io.js';

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
  contract: {
    name: 'CAMPAIGN_SYNC_CONTRACT',
    doc: 'warn or strict: whether pull and watch fail a stream on a new field or enumeration value (flag --contract)',
  },
  notifySecret: {
    name: 'CAMPAIGN_SYNC_NOTIFY_SECRET',
    doc: "the secret that signs --notify's POSTs (flag --notify-secret-file reads it from a file)",
  },
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
  pgHost: {
    name: 'PGHOST',
    doc: "the driver's own: the PostgreSQL host when a postgres:// URL names none; read by campaign-sync for the TLS rule too",
  },
  pgSslMode: {
    name: 'PGSSLMODE',
    doc: "the driver's own: the sslmode when a postgres:// URL says nothing of TLS; read by campaign-sync for the TLS rule too (disable there is refused off this machine)",
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
