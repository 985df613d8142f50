/**
 * Where a setting's value comes from, and the one rule that picks it: a flag beats the environment,
 * the environment beats the config file's profile, the profile beats what the database remembers
 * and the default. Every value carries its origin, so a message about it names what
 * the user wrote: `--page-size`, `CAMPAIGN_SYNC_RATE_LIMIT`, `<file>: profiles.work.page_size`.
 */
import { ENV, type EnvKey, readEnv } from './env.js';

/** What gave a setting its value. */
export type Source = 'flag' | 'env' | 'profile' | 'database' | 'default';

/** A setting's origin, as messages name it. */
export interface Origin {
  readonly source: Source;
  /** `--db`, `CAMPAIGN_SYNC_DB`, `<file>: profiles.<name>.db`; a default is named by its flag. */
  readonly name: string;
  /** Set when the value follows from another setting (a format from `--out` alone): `name` says which. */
  readonly implied?: boolean;
  /** For a profile's value: the config file's mode (a password in a file others can read is warned about). */
  readonly fileMode?: number;
}

/** A value as given (text), with its origin. */
export interface Given {
  readonly text: string;
  readonly origin: Origin;
}

/** Each key a profile may hold, and the option it stands for (commander's attribute name). */
export const PROFILE_KEYS = {
  base_url: 'baseUrl',
  api_key_file: 'apiKeyFile',
  db: 'db',
  pg_schema: 'pgSchema',
  file_mode: 'fileMode',
  rate_limit: 'rateLimit',
  timeout: 'timeout',
  max_retries: 'maxRetries',
  max_retry_wait: 'maxRetryWait',
  compression: 'compression',
  format: 'format',
  out: 'out',
  page_size: 'pageSize',
  concurrency: 'concurrency',
  lease: 'lease',
  report_type: 'reportType',
  contract: 'contract',
  lookback: 'lookback',
  retention: 'retention',
  interval: 'interval',
  lookback_every: 'lookbackEvery',
  notify_secret_file: 'notifySecretFile',
} as const;
export type ProfileKey = keyof typeof PROFILE_KEYS;

/**
 * The environment variable of an option, where there is one. CAMPAIGN_SYNC_API_KEY stands for
 * --api-key-file: it holds the key itself, and beats a profile's api_key_file as any variable does;
 * CAMPAIGN_SYNC_NOTIFY_SECRET stands for --notify-secret-file the same way.
 */
export const ENV_OF: Readonly<Partial<Record<string, EnvKey>>> = {
  baseUrl: 'baseUrl',
  apiKeyFile: 'apiKey',
  db: 'db',
  rateLimit: 'rateLimit',
  format: 'format',
  out: 'out',
  contract: 'contract',
  notifySecretFile: 'notifySecret',
};

/** The chosen profile of a config file (config/profile.ts), its values by option, paths already made absolute. */
export interface Profile {
  readonly file: string;
  readonly name: string;
  readonly mode: number;
  /** Option -> the profile's key (as written) and its value as text. */
  readonly values: ReadonlyMap<string, { key: string; text: string }>;
}

/** `--page-size` for `pageSize`. */
export function flagName(option: string): string {
  return `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Where each source of an option's value is read. `env: false` leaves the environment out (export's --format has no variable). */
export interface Inputs {
  readonly flags: Readonly<Record<string, unknown>>;
  readonly env: NodeJS.ProcessEnv;
  readonly profile?: Profile | undefined;
}

/**
 * The value of `option` by the rule of precedence, or undefined when nothing gave one (then the
 * default applies, or the database's memory). Only text options: a switch is a flag alone.
 */
export function pick(option: string, inputs: Inputs, withEnv = true): Given | undefined {
  const flag = inputs.flags[option];
  if (flag !== undefined) return { text: String(flag), origin: { source: 'flag', name: flagName(option) } };
  const envKey = withEnv ? ENV_OF[option] : undefined;
  const fromEnv = envKey === undefined ? undefined : readEnv(envKey, inputs.env);
  if (envKey !== undefined && fromEnv !== undefined) return { text: fromEnv, origin: { source: 'env', name: ENV[envKey].name } };
  const profile = inputs.profile;
  const fromProfile = profile?.values.get(option);
  if (profile === undefined || fromProfile === undefined) return undefined;
  const name = `${profile.file}: profiles.${profile.name}.${fromProfile.key}`;
  return { text: fromProfile.text, origin: { source: 'profile', name, fileMode: profile.mode } };
}

/** The origin of a default: named by its flag, as a message about it always was. */
export function byDefault(option: string): Origin {
  return { source: 'default', name: flagName(option) };
}

/**
 * A value with its origin, as the user wrote it: `--format ndjson`, `CAMPAIGN_SYNC_FORMAT=ndjson`,
 * `<file>: profiles.x.format = "ndjson"`; a value implied by another setting is named by that one.
 * Not for secrets: the value is part of the text.
 */
export function said(origin: Origin, value: string): string {
  if (origin.implied || origin.source === 'default' || origin.source === 'database') return origin.name;
  if (origin.source === 'flag') return `${origin.name} ${value}`;
  return origin.source === 'env' ? `${origin.name}=${value}` : `${origin.name} = "${value}"`;
}
