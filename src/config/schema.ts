/**
 * Every setting's default, and the one zod schema per command that turns what the user gave (flags,
 * then environment) into typed values. Nothing else declares a default: commander passes only what
 * was typed, so a value the user gave can be told from a default (what lets a config file's profile
 * sit between the environment and these defaults), and `--help` shows these (cli.ts).
 *
 * Each field parses with the same function and message as before (config/duration.ts), so every
 * error still names the flag: `--page-size: "0" must be a whole number from 1 to 100`.
 */
import { z } from 'zod';
import { REPORT_TYPES } from '../core/types.js';
import { UsageError } from '../errors.js';
import { DEFAULTS } from './defaults.js';
import { parseDuration, parseIntIn, parseRate } from './duration.js';

export { DEFAULTS };

/** A text setting parsed by `parse`, whose UsageError message (naming the flag) becomes the issue. */
function parsed<T>(parse: (text: string) => T) {
  return z.string().transform((text, ctx) => {
    try {
      return parse(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

/** One of `values`, in any case (a profile or the environment may write `detailed`); the listed spelling comes out. */
function oneOf<const V extends readonly [string, ...string[]]>(values: V, flag: string) {
  return z
    .string()
    .transform((v) => values.find((x) => x.toLowerCase() === v.trim().toLowerCase()) ?? v)
    .refine((v): v is V[number] => (values as readonly string[]).includes(v), { message: `${flag}: must be ${values.join(' or ')}` });
}

/** Settings of every command that calls the API (the base URL and key are read in config.ts). */
export const apiSchema = z.object({
  rateLimit: parsed((t) => parseRate(t, '--rate-limit')).prefault(DEFAULTS.rateLimit),
  timeout: parsed((t) => parseDuration(t, '--timeout')).prefault(DEFAULTS.timeout),
  maxRetries: parsed((t) => parseIntIn(t, '--max-retries', 0, 100)).prefault(DEFAULTS.maxRetries),
  maxRetryWait: parsed((t) => parseDuration(t, '--max-retry-wait')).prefault(DEFAULTS.maxRetryWait),
  compression: oneOf(['auto', 'gzip', 'off'] as const, '--compression').prefault(DEFAULTS.compression),
});

/** Settings of `pull` and `watch` (a pass). */
export const syncSchema = z.object({
  reportType: oneOf(REPORT_TYPES, '--report-type').prefault(DEFAULTS.reportType),
  format: oneOf(['sqlite', 'ndjson'] as const, '--format').prefault(DEFAULTS.format),
  out: z.string().prefault(DEFAULTS.out),
  pageSize: parsed((t) => parseIntIn(t, '--page-size', 1, 100)).prefault(DEFAULTS.pageSize),
  concurrency: parsed((t) => parseIntIn(t, '--concurrency', 1, 64)).prefault(DEFAULTS.concurrency),
  lookback: parsed((t) => parseDuration(t, '--lookback')).optional(),
});

export const watchSchema = z.object({
  interval: parsed((t) => parseDuration(t, '--interval')).prefault(DEFAULTS.interval),
  maxCycles: parsed((t) => parseIntIn(t, '--max-cycles', 1, Number.MAX_SAFE_INTEGER)).optional(),
  lookbackEvery: parsed((t) => parseDuration(t, '--lookback-every')).prefault(DEFAULTS.lookbackEvery),
  maxAge: parsed((t) => parseDuration(t, '--max-age')).prefault(DEFAULTS.maxAge),
  maxStaleness: parsed((t) => parseDuration(t, '--max-staleness')).prefault(DEFAULTS.maxStaleness),
});

export const statusSchema = z.object({
  maxAge: parsed((t) => parseDuration(t, '--max-age')).prefault(DEFAULTS.maxAge),
});

export const exportSchema = z.object({
  format: oneOf(['csv', 'ndjson', 'parquet'] as const, '--format').prefault(DEFAULTS.exportFormat),
});

export const simulateSchema = z.object({
  port: parsed((t) => parseIntIn(t, '--port', 0, 65535)).prefault(DEFAULTS.port),
  host: z.string().prefault(DEFAULTS.host),
  seed: z.string().prefault(DEFAULTS.seed),
  campaigns: parsed((t) => parseIntIn(t, '--campaigns', 0, 10_000)).prefault(DEFAULTS.campaigns),
  records: parsed((t) => parseIntIn(t, '--records', 0, 100_000_000)).prefault(DEFAULTS.records),
  apiKey: z.string().prefault(DEFAULTS.simulatorApiKey),
  rateLimit: z.string().prefault(DEFAULTS.simulatorRateLimit),
});

export const demoSchema = z.object({
  db: z.string().prefault(DEFAULTS.demoDb),
  seed: z.string().prefault(DEFAULTS.seed),
  campaigns: parsed((t) => parseIntIn(t, '--campaigns', 1, 1000)).prefault(DEFAULTS.campaigns),
  records: parsed((t) => parseIntIn(t, '--records', 0, 1_000_000)).prefault(DEFAULTS.records),
});

/**
 * Parses settings with `schema`; the first problem is a UsageError (exit 2) whose message names the
 * flag. `undefined` values count as not given.
 */
export function parseSettings<S extends z.ZodType>(schema: S, input: object): z.output<S> {
  const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const result = schema.safeParse(given);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new UsageError(issue?.message ?? 'invalid settings');
}
