/**
 * Defaults live in one place (config/defaults.ts, applied by config/schema.ts): commander declares
 * none, so what the user typed can be told from a default, and --help still shows every one.
 */
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import { DEFAULTS } from '../../../src/config/defaults.js';
import { apiSchema, demoSchema, exportSchema, parseSettings, simulateSchema, syncSchema, watchSchema } from '../../../src/config/schema.js';
import { UsageError } from '../../../src/errors.js';

const program = buildProgram(new AbortController().signal, { exitCode: 0 });

describe('one place for defaults', () => {
  it('commander declares no default for any option of any command', () => {
    for (const cmd of program.commands) {
      for (const opt of cmd.options) expect(opt.defaultValue, `${cmd.name()} ${opt.long}`).toBeUndefined();
    }
  });

  it('--help shows the defaults', () => {
    // Help wraps long lines: compare with white space folded.
    const help = (name: string) =>
      (program.commands.find((c) => c.name() === name) as NonNullable<(typeof program.commands)[0]>).helpInformation().replace(/\s+/g, ' ');
    expect(help('pull')).toContain('--page-size <n> records per request, 1 to 100 (default: 100)');
    expect(help('pull')).toContain('(default: DETAILED)');
    expect(help('pull')).toContain('(default: ./campaign-sync.db)');
    expect(help('pull')).toContain('(default: 2m)');
    expect(help('watch')).toContain('--interval <duration> time from the start of one pass to the next (default: 2m)');
    expect(help('export')).toContain('(default: csv)');
    expect(help('simulate')).toContain('(default: demo-key)');
    expect(help('demo')).toContain('(default: ./campaign-sync-demo.db)');
  });

  it('the schemas apply the defaults, typed', () => {
    expect(parseSettings(syncSchema, {})).toEqual({
      reportType: 'DETAILED',
      contract: 'warn',
      format: 'sqlite',
      out: DEFAULTS.out,
      pageSize: 100,
      concurrency: 4,
      lease: 30_000,
    });
    expect(parseSettings(apiSchema, {})).toEqual({
      rateLimit: { count: 100, windowMs: 60_000 },
      timeout: 30_000,
      maxRetries: 5,
      maxRetryWait: 120_000,
      compression: 'auto',
    });
    expect(parseSettings(watchSchema, {})).toEqual({
      interval: 120_000,
      lookbackEvery: 3_600_000,
      maxAge: 600_000,
      maxStaleness: 1_800_000,
    });
    expect(parseSettings(exportSchema, {})).toEqual({ format: 'csv' });
    expect(parseSettings(demoSchema, {})).toEqual({ db: DEFAULTS.demoDb, seed: '1', campaigns: 6, records: 250 });
    expect(parseSettings(simulateSchema, { port: '0' })).toMatchObject({
      port: 0,
      host: '127.0.0.1',
      apiKey: 'demo-key',
      rateLimit: '100/1m',
    });
  });

  it('a value given wins, undefined counts as not given, and a bad one names its flag (exit 2)', () => {
    expect(parseSettings(syncSchema, { pageSize: '7', format: undefined })).toMatchObject({ pageSize: 7, format: 'sqlite' });
    expect(() => parseSettings(syncSchema, { pageSize: '0' })).toThrow(
      new UsageError('--page-size: "0" must be a whole number from 1 to 100'),
    );
    expect(() => parseSettings(syncSchema, { reportType: 'FULL' })).toThrow('--report-type: must be DETAILED or OVERALL');
    expect(() => parseSettings(apiSchema, { timeout: 'soon' })).toThrow(/^--timeout: "soon" is not a duration/);
    expect(() => parseSettings(watchSchema, { maxCycles: '0' })).toThrow('--max-cycles');
  });
});
