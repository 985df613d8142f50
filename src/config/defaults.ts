/**
 * Every setting's default, as a user would type it: the schemas of config/schema.ts apply them, and
 * `--help` shows them (cli.ts). Kept apart from the schemas so that `--help` loads no zod.
 */
export const DEFAULTS = {
  db: './campaign-sync.db',
  pgSchema: 'campaign_sync',
  rateLimit: '100/1m',
  timeout: '30s',
  maxRetries: '5',
  maxRetryWait: '2m',
  compression: 'auto',
  reportType: 'DETAILED',
  format: 'sqlite',
  out: './campaign-sync-out',
  pageSize: '100',
  concurrency: '4',
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
