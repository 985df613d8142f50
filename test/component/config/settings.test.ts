/**
 * config/settings.ts: one frozen Settings per command, each value with its source (flag,
 * environment, profile, database, default), the precedence between them, and a bad value named by
 * where it was written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProfile } from '../../../src/config/profile.js';
import { loadSettings, rememberDestination, resolveSettings } from '../../../src/config/settings.js';
import type { Profile } from '../../../src/config/sources.js';
import { tempDir } from '../../helpers/index.js';

const KEY = { CAMPAIGN_SYNC_API_KEY: 'k3y-for-tests' };
const BASE = { baseUrl: 'https://flag.example.com' };

/** A profile as config/profile.ts reads it. */
function profile(values: Record<string, string>, name = 'work'): Profile {
  const map = new Map(
    Object.entries(values).map(([option, text]) => [option, { key: option.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), text }]),
  );
  return { file: '/etc/cs.toml', name, mode: 0o600, values: map };
}

describe('precedence: flag > environment > profile > default', () => {
  it('each setting from each source', () => {
    const p = profile({ rateLimit: '60/1m', baseUrl: 'https://profile.example.com', db: '/p.db', pageSize: '50' });
    const env = { ...KEY, CAMPAIGN_SYNC_RATE_LIMIT: '10/1s', CAMPAIGN_SYNC_DB: '/env.db' };
    const s = resolveSettings('pull', { pageSize: '7' }, env, p);
    // Flag over profile.
    expect(s.pageSize).toBe(7);
    expect(s.sourceOf('pageSize')).toEqual({ source: 'flag', name: '--page-size' });
    // Environment over profile.
    expect(s.api.rate).toEqual({ count: 10, windowMs: 1000 });
    expect(s.sourceOf('rateLimit')).toEqual({ source: 'env', name: 'CAMPAIGN_SYNC_RATE_LIMIT' });
    expect(s.db).toBe('/env.db');
    expect(s.sourceOf('db')).toEqual({ source: 'env', name: 'CAMPAIGN_SYNC_DB' });
    // Profile over default.
    expect(s.api.baseUrl.host).toBe('profile.example.com');
    expect(s.sourceOf('baseUrl')).toMatchObject({ source: 'profile', name: '/etc/cs.toml: profiles.work.base_url', fileMode: 0o600 });
    // Default: named by its flag.
    expect(s.concurrency).toBe(4);
    expect(s.sourceOf('concurrency')).toEqual({ source: 'default', name: '--concurrency' });
    expect(s.sourceOf('timeout')).toEqual({ source: 'default', name: '--timeout' });
    // The key from the environment beats a profile's api_key_file (which is then never read).
    expect(resolveSettings('pull', BASE, KEY, profile({ apiKeyFile: '/nowhere/key' })).api.apiKey).toBe('k3y-for-tests');
    expect(resolveSettings('pull', BASE, KEY).sourceOf('apiKeyFile')).toEqual({ source: 'env', name: 'CAMPAIGN_SYNC_API_KEY' });
  });

  it('a flag beats the environment, which beats the profile, for every source at once', () => {
    const p = profile({ format: 'ndjson', out: '/p/out' });
    const env = { ...KEY, CAMPAIGN_SYNC_OUT: '/env/out' };
    const all = resolveSettings('pull', { ...BASE, out: '/flag/out' }, env, p);
    expect([all.out, all.sourceOf('out').source]).toEqual(['/flag/out', 'flag']);
    const noFlag = resolveSettings('pull', BASE, env, p);
    expect([noFlag.out, noFlag.sourceOf('out').source]).toEqual(['/env/out', 'env']);
    const profileOnly = resolveSettings('pull', BASE, KEY, p);
    expect([profileOnly.out, profileOnly.sourceOf('out').source]).toEqual(['/p/out', 'profile']);
    const none = resolveSettings('pull', BASE, KEY);
    expect([none.out, none.sourceOf('out').source]).toEqual(['./campaign-sync-out', 'default']);
  });

  it('--out alone means NDJSON, named by --out; with --format sqlite it is refused, naming both', () => {
    const s = resolveSettings('pull', { ...BASE, out: '/x' }, KEY);
    expect(s.format).toBe('ndjson');
    expect(s.sourceOf('format')).toEqual({ source: 'flag', name: '--out (an NDJSON folder)', implied: true });
    expect(() => resolveSettings('pull', BASE, { ...KEY, CAMPAIGN_SYNC_OUT: '/x', CAMPAIGN_SYNC_FORMAT: 'sqlite' })).toThrow(
      'CAMPAIGN_SYNC_OUT names an NDJSON folder, but CAMPAIGN_SYNC_FORMAT=sqlite writes records into --db; drop one of them',
    );
  });

  it('an option the command does not take is not read from the profile', () => {
    const p = profile({ lookback: '7d', pageSize: '50', db: '/p.db' });
    const r = resolveSettings('reconcile', BASE, KEY, p);
    expect([r.lookback, r.sourceOf('lookback').source]).toEqual([undefined, 'default']);
    expect(r.pageSize).toBe(50);
    const status = resolveSettings('status', {}, {}, p);
    expect(status).not.toHaveProperty('pageSize');
    expect(status.db).toBe('/p.db');
    // export's --format has no variable: CAMPAIGN_SYNC_FORMAT is where pull sends records.
    const exp = resolveSettings('export', {}, { CAMPAIGN_SYNC_FORMAT: 'ndjson' }, profile({ format: 'parquet' }));
    expect([exp.format, exp.sourceOf('format').source]).toEqual(['parquet', 'profile']);
    // The demo reads neither the environment's database nor its destination.
    const demo = resolveSettings('demo', {}, { CAMPAIGN_SYNC_DB: '/env.db', CAMPAIGN_SYNC_FORMAT: 'ndjson' });
    expect([demo.db, demo.format]).toEqual(['./campaign-sync-demo.db', 'sqlite']);
  });

  it('the database remembers the destination only when nothing else chose one', () => {
    const chosenByNobody = resolveSettings('pull', BASE, KEY);
    const remembered = rememberDestination(chosenByNobody, { kind: 'ndjson', out: '/srv/drop' });
    expect([remembered.format, remembered.out]).toEqual(['ndjson', '/srv/drop']);
    expect(remembered.sourceOf('format').source).toBe('database');
    expect(remembered.sourceOf('out').source).toBe('database');
    expect(remembered.sourceOf('pageSize').source).toBe('default');
    expect(Object.isFrozen(remembered)).toBe(true);
  });

  it('a profile read from its file gives its values with its name, paths relative to the file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'campaign-sync.toml'), '[profiles.w]\nout = "drop"\npage_size = 20\n', { mode: 0o600 });
    const read = await readProfile(undefined, 'w', {}, dir);
    expect(read?.values.get('out')).toEqual({ key: 'out', text: join(dir, 'drop') });
    const s = await loadSettings('pull', { ...BASE, profile: 'w' }, KEY, dir);
    expect([s.pageSize, s.sourceOf('pageSize').name]).toEqual([20, `${join(dir, 'campaign-sync.toml')}: profiles.w.page_size`]);
  });
});

describe('frozen', () => {
  it('every value, nested ones too, throws when changed (strict mode)', () => {
    const s = resolveSettings('watch', { ...BASE, campaign: ['a'] }, KEY);
    expect(Object.isFrozen(s)).toBe(true);
    expect(() => {
      (s as { pageSize: number }).pageSize = 1;
    }).toThrow(TypeError);
    expect(() => {
      (s.campaign as string[]).push('b');
    }).toThrow(TypeError);
    expect(() => {
      (s.api.rate as { count: number }).count = 1_000_000;
    }).toThrow(TypeError);
    expect(() => {
      (s as unknown as { sourceOf: unknown }).sourceOf = () => undefined;
    }).toThrow(TypeError);
    // The flags it was made from are not touched either.
    const flags = { ...BASE, profile: 'w' };
    resolveSettings('pull', flags, KEY, profile({ db: '/p.db' }));
    expect(flags).toEqual({ ...BASE, profile: 'w' });
  });
});

describe('a bad value is named by where it came from', () => {
  it('flag, environment, profile', () => {
    expect(() => resolveSettings('pull', { ...BASE, rateLimit: 'x' }, KEY)).toThrow(/^--rate-limit: "x" is not a rate/);
    expect(() => resolveSettings('pull', BASE, { ...KEY, CAMPAIGN_SYNC_RATE_LIMIT: 'x' })).toThrow(
      /^CAMPAIGN_SYNC_RATE_LIMIT: "x" is not a rate/,
    );
    expect(() => resolveSettings('pull', BASE, KEY, profile({ rateLimit: 'x' }, 'prod'))).toThrow(
      /^\/etc\/cs\.toml: profiles\.prod\.rate_limit: "x" is not a rate/,
    );
    expect(() => resolveSettings('watch', BASE, KEY, profile({ interval: '0' }))).toThrow(
      /^\/etc\/cs\.toml: profiles\.work\.interval: "0" needs a unit/,
    );
    expect(() => resolveSettings('status', {}, {}, profile({ pgSchema: 'Bad-Name' }))).toThrow(
      '/etc/cs.toml: profiles.work.pg_schema: "Bad-Name" is not a plain lower-case identifier (a-z, 0-9, _)',
    );
    expect(() => resolveSettings('pull', {}, KEY, profile({ baseUrl: 'http://api.example.com' }))).toThrow(
      /^\/etc\/cs\.toml: profiles\.work\.base_url: plain http:\/\/ to api\.example\.com/,
    );
    expect(() => resolveSettings('pull', BASE, KEY, profile({ lookback: '4000d' }))).toThrow(
      '/etc/cs.toml: profiles.work.lookback: "4000d" reaches back more than 3650d; use pull --full to re-read everything',
    );
  });
});

describe('status, reset, forget and export: every option a value of the frozen Settings, with its source', () => {
  it('each command reads its own options from its settings, named by the flag that gave them', () => {
    const status = resolveSettings('status', { db: '/m.db', check: true, maxAge: '15m', nagios: true }, {});
    expect([status.check, status.nagios, status.maxAge, status.json]).toEqual([true, true, '15m', false]);
    expect(status.sourceOf('check')).toEqual({ source: 'flag', name: '--check' });
    expect(status.sourceOf('json').source).toBe('default');
    const reset = resolveSettings('reset', { campaign: ['a', 'b'], all: false, quiet: true }, {});
    expect([reset.campaign, reset.all, reset.quiet]).toEqual([['a', 'b'], false, true]);
    expect(resolveSettings('reset', {}, {}).campaign).toEqual([]);
    const forget = resolveSettings('forget', { user: 'jane@example.org' }, {});
    expect(forget.user).toBe('jane@example.org');
    expect(forget.sourceOf('user')).toEqual({ source: 'flag', name: '--user' });
    const exp = resolveSettings(
      'export',
      { table: 'session-results', output: 'x.csv', columns: 'id', campaign: 'c1', since: '2026-01-01', rawCsv: true },
      {},
    );
    expect([exp.table, exp.output, exp.columns, exp.campaign, exp.since, exp.until, exp.rawCsv, exp.sinceLast]).toEqual([
      'session-results',
      'x.csv',
      'id',
      'c1',
      '2026-01-01',
      undefined,
      true,
      undefined,
    ]);
    expect(exp.sourceOf('rawCsv')).toEqual({ source: 'flag', name: '--raw-csv' });
    expect(Object.isFrozen(exp)).toBe(true);
  });

  it("export's days are checked with its settings, before the command runs", () => {
    expect(() => resolveSettings('export', { table: 'campaigns', since: '2026-13-01' }, {})).toThrow(/--since/);
    expect(() => resolveSettings('export', { table: 'campaigns', since: '2026-02-01', until: '2026-01-01' }, {})).toThrow(
      '--since 2026-02-01 is after --until 2026-01-01',
    );
  });
});
