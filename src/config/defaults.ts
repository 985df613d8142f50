/**
 * Every setting's default, as a user would type it: the schemas of config/schema.ts apply them, and
 * `--help` shows them (cli.ts). Kept apart from the schemas so that `--help` loads no zod.
 */
import { CONTRACT_MODES } from '../core/drift.js';
import { REPORT_TYPES } from '../core/types.js';

export const DEFAULTS = {
  db: './campaign-sync.db',
  pgSchema: 'campaign_sync',
  fileMode: 'private',
  rateLimit: '100/1m',
  timeout: '30s',
  maxRetries: '5',
  maxRetryWait: '2m',
  compression: 'auto',
  reportType: 'DETAILED',
  contract: 'warn',
  format: 'sqlite',
  out: './campaign-sync-out',
  pageSize: '100',
  concurrency: '4',
  lease: '30s',
  interval: '2m',
  lookbackEvery: '1h',
  maxAge: '10m',
  maxStaleness: '30m',
  exportFormat: 'csv',
  demoDb: './campaign-sync-demo.db',
  seed: '1',
  campaigns: '6',
  records: '250',
  port: '8080',
  host: '127.0.0.1',
  simulatorApiKey: 'demo-key',
  simulatorRateLimit: '100/1m',
} as const;

/** ` (default: X)` for a help line. */
export function shownDefault(key: keyof typeof DEFAULTS): string {
  return ` (default: ${DEFAULTS[key]})`;
}

/**
 * The values of each option that takes a fixed set: cli.ts declares them on the option (its parser,
 * --help and the completion scripts read them there) and the schemas check the same lists, so a
 * profile or the environment is held to what the flag accepts.
 */
export const CHOICES = {
  compression: ['auto', 'gzip', 'off'],
  type: ['session', 'role'],
  reportType: REPORT_TYPES,
  contract: CONTRACT_MODES,
  format: ['sqlite', 'ndjson'],
  fileMode: ['private', 'group'],
  exportFormat: ['csv', 'ndjson', 'parquet'],
  table: ['campaigns', 'session-results', 'role-results', 'score-details', 'eval-results', 'results', 'latest_results', 'skill_scores'],
} as const;
