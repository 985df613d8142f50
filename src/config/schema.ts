/**
 * Every setting's default, and the one schema per command that turns what the user gave (flags,
 * then environment) into typed values. Nothing else declares a default: commander passes only what
 * was typed, so a value the user gave can be told from a default (what lets a config file's profile
 * sit between the environment and these defaults), and `--help` shows these (cli.ts).
 *
 * Each field parses with the same function and message as before (config/duration.ts), so every
 * error still names the flag: `--page-size: "0" must be a whole number from 1 to 100`.
 *
 * A schema is a table of fields, read directly for the text that flags, environment and profiles
 * give (a no-op pull starts without loading zod). Any other value (a number from code) goes
 * through the same table as a zod schema, built on first use, so its message is zod's as before.
 */
import { createRequire } from 'node:module';
import type { z as Z } from 'zod';
import { UsageError } from '../errors.js';
import { CHOICES, DEFAULTS } from './defaults.js';
import { parseDuration, parseIntIn, parseRate } from './duration.js';
import { byDefault, type Given, type Origin } from './sources.js';

export { DEFAULTS };

/** One setting: its text parsed (throwing the message that names the flag), with the default text if it has one. */
export interface Setting<T> {
  readonly parse: (text: string) => T;
  readonly fallback: string | undefined;
}
/** A command's settings, by option name, in the order their problems are reported. */
export type Schema = Record<string, Setting<unknown>>;
/** The typed values of a schema. */
export type Settings<S extends Schema> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/**
 * Checks a value that did not come from a flag (the environment, a profile) where it is read, so a
 * bad one is named by where it was written (`CAMPAIGN_SYNC_RATE_LIMIT: "bogus" is not a rate…`),
 * not by the flag it stands in for, which the user never typed. Returns the value.
 */
export function checkAt(setting: Setting<unknown>, where: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    setting.parse(value);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    throw new UsageError(`${where}: ${err.message.replace(/^--[a-z-]+: /, '')}`);
  }
  return value;
}

/**
 * A setting's value from what was given (config/sources.ts pick), else its default, with its origin;
 * a bad value is named by its origin (checkAt). Undefined, with the default's origin, when neither.
 */
export function parseGiven<T>(setting: Setting<T>, given: Given | undefined, option: string): { value: T; origin: Origin } {
  if (given === undefined) {
    const origin = byDefault(option);
    return { value: setting.fallback === undefined ? (undefined as T) : setting.parse(setting.fallback), origin };
  }
  if (given.origin.source !== 'flag') checkAt(setting, given.origin.name, given.text);
  return { value: setting.parse(given.text), origin: given.origin };
}

/** A setting parsed by `parse`, defaulting to `fallback` (as typed) when not given. */
function parsed<T>(parse: (text: string) => T, fallback: string): Setting<T> {
  return { parse, fallback };
}

/** A setting parsed by `parse`, undefined when not given. */
function optional<T>(parse: (text: string) => T): Setting<T | undefined> {
  return { parse, fallback: undefined };
}

/** Text as given. */
function text(fallback: string): Setting<string> {
  return { parse: (t) => t, fallback };
}

/** One of `values`, in any case (a profile or the environment may write `detailed`); the listed spelling comes out. */
function oneOf<const V extends readonly [string, ...string[]]>(values: V, flag: string, fallback: string): Setting<V[number]> {
  return parsed((v) => {
    const hit = values.find((x) => x.toLowerCase() === v.trim().toLowerCase()) ?? v;
    if (!(values as readonly string[]).includes(hit)) throw new UsageError(`${flag}: must be ${values.join(' or ')}`);
    return hit as V[number];
  }, fallback);
}

/** Settings of every command that calls the API (the base URL and key are read in config.ts). */
export const apiSchema = {
  rateLimit: parsed((t) => parseRate(t, '--rate-limit'), DEFAULTS.rateLimit),
  timeout: parsed((t) => parseDuration(t, '--timeout'), DEFAULTS.timeout),
  maxRetries: parsed((t) => parseIntIn(t, '--max-retries', 0, 100), DEFAULTS.maxRetries),
  maxRetryWait: parsed((t) => parseDuration(t, '--max-retry-wait'), DEFAULTS.maxRetryWait),
  compression: oneOf(CHOICES.compression, '--compression', DEFAULTS.compression),
};

/** Settings of the commands that may create a mirror's files (pull, watch, reconcile, quarantine, campaigns). */
export const mirrorSchema = {
  fileMode: oneOf(CHOICES.fileMode, '--file-mode', DEFAULTS.fileMode),
};

/** Settings of `pull` and `watch` (a pass). */
export const syncSchema = {
  reportType: oneOf(CHOICES.reportType, '--report-type', DEFAULTS.reportType),
  contract: oneOf(CHOICES.contract, '--contract', DEFAULTS.contract),
  format: oneOf(CHOICES.format, '--format', DEFAULTS.format),
  out: text(DEFAULTS.out),
  pageSize: parsed((t) => parseIntIn(t, '--page-size', 1, 100), DEFAULTS.pageSize),
  concurrency: parsed((t) => parseIntIn(t, '--concurrency', 1, 64), DEFAULTS.concurrency),
  lookback: optional((t) => parseDuration(t, '--lookback')),
  retention: optional((t) => parseDuration(t, '--retention')),
  lease: parsed((t) => parseLease(t), DEFAULTS.lease),
};

/** Settings of `pull` alone. */
export const pullSchema = {
  metricsFileMode: optional(parseMetricsFileMode),
};

/**
 * --metrics-file-mode: octal (`644`, `0640`). A mode that lets group or others write the file is
 * refused: node_exporter would serve whatever they put there.
 */
function parseMetricsFileMode(text: string): number {
  if (!/^0?[0-7]{3}$/.test(text.trim()))
    throw new UsageError(`--metrics-file-mode: "${text}" is not a file mode; give three octal digits, such as 644 or 0640`);
  const mode = Number.parseInt(text.trim(), 8);
  if ((mode & 0o022) !== 0)
    throw new UsageError(
      `--metrics-file-mode: ${text.trim()} lets other users change the metrics node_exporter serves; give one without group or other write, such as 644 or 0640`,
    );
  return mode;
}

export const forgetSchema = {
  olderThan: optional((t) => parseDuration(t, '--older-than')),
};

/** --lease: 1s to 1h (a shorter one would expire between two renewals of a loaded host). */
function parseLease(text: string): number {
  const ms = parseDuration(text, '--lease');
  if (ms < 1000 || ms > 3_600_000) throw new UsageError(`--lease: must be from 1s to 1h, not "${text}"`);
  return ms;
}

export const watchSchema = {
  interval: parsed((t) => parseDuration(t, '--interval'), DEFAULTS.interval),
  maxCycles: optional((t) => parseIntIn(t, '--max-cycles', 1, Number.MAX_SAFE_INTEGER)),
  lookbackEvery: parsed((t) => parseDuration(t, '--lookback-every'), DEFAULTS.lookbackEvery),
  maxAge: parsed((t) => parseDuration(t, '--max-age'), DEFAULTS.maxAge),
  maxStaleness: parsed((t) => parseDuration(t, '--max-staleness'), DEFAULTS.maxStaleness),
};

export const statusSchema = {
  maxAge: parsed((t) => parseDuration(t, '--max-age'), DEFAULTS.maxAge),
};

export const exportSchema = {
  format: oneOf(CHOICES.exportFormat, '--format', DEFAULTS.exportFormat),
};

export const simulateSchema = {
  port: parsed((t) => parseIntIn(t, '--port', 0, 65535), DEFAULTS.port),
  host: text(DEFAULTS.host),
  seed: text(DEFAULTS.seed),
  campaigns: parsed((t) => parseIntIn(t, '--campaigns', 0, 10_000), DEFAULTS.campaigns),
  records: parsed((t) => parseIntIn(t, '--records', 0, 100_000_000), DEFAULTS.records),
  apiKey: text(DEFAULTS.simulatorApiKey),
  rateLimit: text(DEFAULTS.simulatorRateLimit),
  growthCampaigns: optional((t) => parseIntIn(t, '--growth-campaigns', 0, 10_000)),
};

export const demoSchema = {
  db: text(DEFAULTS.demoDb),
  seed: text(DEFAULTS.seed),
  campaigns: parsed((t) => parseIntIn(t, '--campaigns', 1, 1000), DEFAULTS.campaigns),
  records: parsed((t) => parseIntIn(t, '--records', 0, 1_000_000), DEFAULTS.records),
};

/** The schema as zod, for values that are not text: zod's own messages (`Invalid input: expected string, …`). */
function zodSchema(schema: Schema): Z.ZodType {
  const { z } = createRequire(import.meta.url)('zod') as { z: typeof Z };
  const field = (s: Setting<unknown>) => {
    const checked = z.string().transform((t, ctx) => {
      try {
        return s.parse(t);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });
    return s.fallback === undefined ? checked.optional() : checked.prefault(s.fallback);
  };
  return z.object(Object.fromEntries(Object.entries(schema).map(([k, s]) => [k, field(s)])));
}

/**
 * Parses settings with `schema`; the first problem is a UsageError (exit 2) whose message names the
 * flag. `undefined` values count as not given; keys the schema does not name are ignored.
 */
export function parseSettings<S extends Schema>(schema: S, input: object): Settings<S> {
  const given = input as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(schema)) {
    const value = given[key] === undefined ? setting.fallback : given[key];
    if (value === undefined) continue;
    if (typeof value !== 'string') return parseWithZod(schema, given);
    try {
      out[key] = setting.parse(value);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  return out as Settings<S>;
}

function parseWithZod<S extends Schema>(schema: S, given: Record<string, unknown>): Settings<S> {
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  const result = zodSchema(schema).safeParse(defined);
  if (result.success) return result.data as Settings<S>;
  throw new UsageError(result.error.issues[0]?.message ?? 'invalid settings');
}
