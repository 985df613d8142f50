/**
 * The config file and its profiles: found where documented, validated whole, filling only
 * what flags and environment left unset, and never holding a literal key.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProfile } from '../../../src/config/profile.js';
import { type CommandName, loadSettings } from '../../../src/config/settings.js';
import { cli, sim, tempDir } from '../../helpers/index.js';

/** The API from the environment, so that a pull's settings resolve without a profile's. */
const API_ENV = { CAMPAIGN_SYNC_BASE_URL: 'https://env.example.com', CAMPAIGN_SYNC_API_KEY: 'k3y-for-tests' };

/** A command's settings with the config file of `cwd` (as cli.ts loads them). */
function load<C extends CommandName = 'pull'>(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, cwd: string, command?: C) {
  return loadSettings((command ?? 'pull') as C, flags, env, cwd);
}

function project(toml: string): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'campaign-sync.toml'), toml);
  return dir;
}

const TOML = `
default_profile = "a"

[profiles.a]
base_url = "https://a.example.com"
api_key_file = "keys/a.key"
db = "~/mirrors/a.db"
page_size = 50
rate_limit = "60/1m"

[profiles.b]
base_url = "https://b.example.com"
format = "ndjson"
out = "/srv/drop/b"
`;

describe('config profiles', () => {
  it('fills what flags and environment left unset: flags > environment > profile > defaults', async () => {
    const dir = project(TOML);
    const file = join(dir, 'campaign-sync.toml');
    mkdirSync(join(dir, 'keys'));
    writeFileSync(join(dir, 'keys/a.key'), 'key-of-a\n', { mode: 0o600 });
    const used = await readProfile(undefined, undefined, { CAMPAIGN_SYNC_RATE_LIMIT: '5/1s' }, dir);
    expect(used).toMatchObject({ file, name: 'a' });
    const settings = await load({ pageSize: '10' }, { CAMPAIGN_SYNC_RATE_LIMIT: '5/1s' }, dir);
    expect(settings.pageSize).toBe(10);
    expect(settings.sourceOf('pageSize')).toEqual({ source: 'flag', name: '--page-size' });
    expect(settings.api.baseUrl.href).toBe('https://a.example.com/');
    // Relative to the file's folder; ~ is the home folder.
    expect(settings.api.apiKey).toBe('key-of-a');
    expect(settings.db).toBe(join(process.env.HOME ?? '', 'mirrors/a.db'));
    // The environment beats the profile's rate_limit.
    expect(settings.api.rate).toEqual({ count: 5, windowMs: 1000 });
    expect(settings.sourceOf('rateLimit')).toEqual({ source: 'env', name: 'CAMPAIGN_SYNC_RATE_LIMIT' });
    // Every value the profile gave, by its key: messages name that, not a flag never typed; the
    // database's also with the file's mode (config/config.ts dbWarnings warns of a password others can read).
    expect(settings.sourceOf('baseUrl')).toMatchObject({ source: 'profile', name: `${file}: profiles.a.base_url` });
    expect(settings.sourceOf('apiKeyFile')).toMatchObject({ source: 'profile', name: `${file}: profiles.a.api_key_file` });
    expect(settings.sourceOf('db')).toEqual({ source: 'profile', name: `${file}: profiles.a.db`, fileMode: expect.any(Number) });
    expect(settings.sourceOf('concurrency')).toEqual({ source: 'default', name: '--concurrency' });
    // --profile beats default_profile; CAMPAIGN_SYNC_PROFILE too; options the command lacks are left out.
    const b = await load({ profile: 'b' }, {}, dir, 'export');
    expect(b).toMatchObject({ format: 'ndjson' });
    expect(b).not.toHaveProperty('out');
    expect(b).not.toHaveProperty('api');
    const viaEnv = await load(
      {},
      { ...API_ENV, CAMPAIGN_SYNC_BASE_URL: undefined, CAMPAIGN_SYNC_PROFILE: 'b', CAMPAIGN_SYNC_OUT: '/elsewhere' },
      dir,
    );
    expect(viaEnv.api.baseUrl.href).toBe('https://b.example.com/');
    expect(viaEnv.format).toBe('ndjson');
    expect(viaEnv.out).toBe('/elsewhere');
    expect(viaEnv.sourceOf('out')).toEqual({ source: 'env', name: 'CAMPAIGN_SYNC_OUT' });
  });

  it('finds the user file under XDG_CONFIG_HOME, or --config; none at all is fine', async () => {
    const xdg = tempDir();
    mkdirSync(join(xdg, 'campaign-sync'));
    writeFileSync(join(xdg, 'campaign-sync', 'config.toml'), '[profiles.x]\nbase_url = "https://x.example.com"\n');
    const empty = tempDir();
    const x = await readProfile(undefined, 'x', { XDG_CONFIG_HOME: xdg }, empty);
    expect(x?.values.get('baseUrl')?.text).toBe('https://x.example.com');
    const other = project(TOML);
    const viaFlag = await readProfile(join(other, 'campaign-sync.toml'), 'b', {}, empty);
    expect(viaFlag?.values.get('baseUrl')?.text).toBe('https://b.example.com');
    expect(await readProfile(undefined, undefined, { XDG_CONFIG_HOME: tempDir() }, empty)).toBeUndefined();
  });

  it('names the file, profile and key of every mistake', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['[profiles.a]\nbase_ur = "x"\n', {}, /campaign-sync\.toml: profiles\.a: unknown key "base_ur" \(allowed: base_url/],
      ['[profiles.a]\napi_key = "sk_live_123"\n', {}, /profiles\.a: "api_key" would keep the API key in the config file; .*api_key_file/],
      ['[profiles.a]\npage_size = [1]\n', {}, /profiles\.a\.page_size: must be a string or a number/],
      ['colour = "red"\n', {}, /unknown top-level key colour \(allowed: default_profile, \[profiles\.NAME\]\)/],
      ['default_profile = 5\n', {}, /campaign-sync\.toml: default_profile must be a string: the name of one of its \[profiles\.NAME\]$/],
      // Names Object.prototype holds are no profiles (they ran on the defaults); __proto__ is refused, not dropped.
      ...['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__'].map((name): [string, Record<string, unknown>, RegExp] => [
        '[profiles.a]\n',
        { profile: name },
        new RegExp(`has no profile "${name}" \\(profiles: a\\)`),
      ]),
      [
        '[profiles.__proto__]\ndb = "p.db"\n',
        { profile: '__proto__' },
        /profiles\.__proto__: that name cannot be a profile; rename the table$/,
      ],
      // Inside a profile too, as a table or an inline one: refused as any unknown key is, not dropped.
      ['[profiles.a]\ndb = "m.db"\n[profiles.a.__proto__]\nx = 1\n', { profile: 'a' }, /profiles\.a: unknown key "__proto__" \(allowed: /],
      ['[profiles.a]\n__proto__ = { db = "m.db", report_type = 7 }\n', { profile: 'a' }, /profiles\.a: unknown key "__proto__"/],
      ['[profiles.a\n', {}, /:1:\d+: not valid TOML: /],
      ['[profiles.a]\n', { profile: 'zz' }, /has no profile "zz" \(profiles: a\)/],
      // A value of the right type but out of range is named where it was written, not as the flag it fills.
      [
        '[profiles.a]\npage_size = 500\n',
        { profile: 'a' },
        /campaign-sync\.toml: profiles\.a\.page_size: "500" must be a whole number from 1 to 100$/,
      ],
      ['[profiles.a]\nrate_limit = "bogus"\n', { profile: 'a' }, /campaign-sync\.toml: profiles\.a\.rate_limit: "bogus" is not a rate/],
      [
        '[profiles.a]\nlookback = "0"\n',
        { profile: 'a' },
        /campaign-sync\.toml: profiles\.a\.lookback: "0" needs a unit: ms, s, m, h or d/,
      ],
      [
        '[profiles.a]\nreport_type = "FULL"\n',
        { profile: 'a' },
        /campaign-sync\.toml: profiles\.a\.report_type: must be DETAILED or OVERALL/,
      ],
    ];
    for (const [toml, flags, message] of cases) {
      const dir = project(toml);
      await expect(load({ ...flags }, API_ENV, dir)).rejects.toThrow(message);
    }
    // export's format is its own: a profile's "parquet" is not checked against pull's sqlite/ndjson.
    const exportDir = project('[profiles.a]\nformat = "parquet"\n');
    expect((await load({ profile: 'a' }, {}, exportDir, 'export')).format).toBe('parquet');
    // A value a flag overrides is not the one used: it is not checked either.
    const overridden = project('[profiles.a]\npage_size = 500\n');
    expect((await load({ profile: 'a', pageSize: '20' }, API_ENV, overridden)).pageSize).toBe(20);
    await expect(load({ profile: 'a' }, { XDG_CONFIG_HOME: tempDir() }, tempDir())).rejects.toThrow(/--profile a: no config file/);
    await expect(load({ config: 'nope.toml' }, {}, tempDir())).rejects.toThrow(/--config: .*nope\.toml does not exist/);
    await expect(load({ config: '' }, {}, tempDir())).rejects.toThrow(/^--config: the file name is empty/);
    // A profile the environment or the file chose is named by that, not as a --profile never typed.
    const one = project('[profiles.a]\n');
    await expect(load({}, { CAMPAIGN_SYNC_PROFILE: 'toString' }, one)).rejects.toThrow(
      /^CAMPAIGN_SYNC_PROFILE: .*campaign-sync\.toml has no profile "toString" \(profiles: a\)$/,
    );
    await expect(load({}, { CAMPAIGN_SYNC_PROFILE: 'b', XDG_CONFIG_HOME: tempDir() }, tempDir())).rejects.toThrow(
      /^CAMPAIGN_SYNC_PROFILE=b: no config file/,
    );
    await expect(load({}, {}, project('default_profile = "valueOf"\n[profiles.a]\n'))).rejects.toThrow(
      /campaign-sync\.toml: default_profile "valueOf" is not one of its profiles \(profiles: a\)$/,
    );
  });

  it('a config file that is there but cannot be followed is an error naming it, never the defaults', async () => {
    // A loop of symbolic links: `--config` said "does not exist"; the working directory's and the
    // user's were ignored, so the pull ran on the defaults (the key sent to the default service).
    const loop = tempDir();
    symlinkSync('b.toml', join(loop, 'a.toml'));
    symlinkSync('a.toml', join(loop, 'b.toml'));
    await expect(load({ config: 'a.toml' }, {}, loop)).rejects.toThrow(/^--config: .*a\.toml is a loop of symbolic links$/);
    const local = tempDir();
    symlinkSync('campaign-sync.toml', join(local, 'campaign-sync.toml'));
    await expect(load({}, { XDG_CONFIG_HOME: tempDir() }, local)).rejects.toThrow(/config file: .*campaign-sync\.toml is a loop/);
    // A symbolic link to a file that is gone, in the working directory or the user's folder.
    const dangling = tempDir();
    symlinkSync(join(dangling, 'moved.toml'), join(dangling, 'campaign-sync.toml'));
    await expect(load({}, { XDG_CONFIG_HOME: tempDir() }, dangling)).rejects.toThrow(
      /config file: .*campaign-sync\.toml is a symbolic link to a file that does not exist/,
    );
    const xdg = tempDir();
    mkdirSync(join(xdg, 'campaign-sync'));
    symlinkSync(join(xdg, 'gone.toml'), join(xdg, 'campaign-sync', 'config.toml'));
    await expect(load({}, { XDG_CONFIG_HOME: xdg }, tempDir())).rejects.toThrow(/config\.toml is a symbolic link to a file/);
    // Nothing there at all is still fine: no config file.
    await load({}, { ...API_ENV, XDG_CONFIG_HOME: tempDir() }, tempDir());
    // Spawned: one line, exit 2.
    const r = await cli(['status', '--db', join(loop, 'x.db'), '--config', 'a.toml'], { cwd: loop });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('is a loop of symbolic links');
  });

  it('a spawned pull uses the profile; a bad file is exit 2 and the key is never printed', async () => {
    const s = await sim({ campaigns: 2, records: 5 });
    const dir = tempDir();
    writeFileSync(join(dir, 'agency.key'), `${s.apiKey}\n`, { mode: 0o600 });
    writeFileSync(
      join(dir, 'campaign-sync.toml'),
      `[profiles.agency]\nbase_url = "${s.url}"\napi_key_file = "agency.key"\ndb = "agency.db"\npage_size = 2\ncompression = "gzip"\n`,
    );
    const r = await cli(['pull', '--profile', 'agency', '--json'], { cwd: dir, env: { XDG_CONFIG_HOME: dir } });
    // compression = "gzip" in the profile: the simulator was asked for gzip (loopback is off by default).
    expect(s.stats.gzipped).toBeGreaterThan(0);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.records).toBe(10);
    expect(doc.streams[0].pages).toBe(3);
    const status = await cli(['status', '--json'], { cwd: dir, env: { CAMPAIGN_SYNC_PROFILE: 'agency' } });
    expect(JSON.parse(status.stdout).streams).toHaveLength(2);
    writeFileSync(join(dir, 'campaign-sync.toml'), `[profiles.agency]\napi_key = "${s.apiKey}"\n`);
    const bad = await cli(['pull', '--profile', 'agency'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/would keep the API key in the config file/);
    expect(bad.stderr + bad.stdout).not.toContain(s.apiKey);
  });
});

describe('a bad value from the environment', () => {
  it('is named by its variable, not by the flag it stands in for; a flag given beats it unchecked', async () => {
    const db = join(tempDir(), 'm.db');
    const base = { CAMPAIGN_SYNC_BASE_URL: 'http://127.0.0.1:9', CAMPAIGN_SYNC_API_KEY: 'k' };
    const rate = await cli(['pull', '--db', db], { env: { ...base, CAMPAIGN_SYNC_RATE_LIMIT: 'bogus' } });
    expect(rate.code).toBe(2);
    expect(rate.stderr).toBe('campaign-sync: CAMPAIGN_SYNC_RATE_LIMIT: "bogus" is not a rate (examples: 100, 100/1m, 100/minute, 20/2s)\n');
    const format = await cli(['pull', '--db', db], { env: { ...base, CAMPAIGN_SYNC_FORMAT: 'xml' } });
    expect(format.code).toBe(2);
    expect(format.stderr).toBe('campaign-sync: CAMPAIGN_SYNC_FORMAT: must be sqlite or ndjson\n');
    const flag = await cli(['pull', '--db', db, '--rate-limit', 'nope'], { env: { ...base, CAMPAIGN_SYNC_RATE_LIMIT: 'bogus' } });
    expect(flag.stderr).toMatch(/^campaign-sync: --rate-limit: "nope" is not a rate/);
  });
});

describe('a config file or key file that is not safely yours', () => {
  it('one another user owns or may change is refused (exit 2): it decides where the key is sent', async () => {
    const dir = project('[profiles.x]\nbase_url = "https://evil.example.com"\n');
    const file = join(dir, 'campaign-sync.toml');
    chmodSync(file, 0o666);
    const open = await cli(['status', '--profile', 'x'], { cwd: dir });
    expect(open.code).toBe(2);
    expect(open.stderr).toContain(
      `${file}: other users may change the config file (mode 0666), and it decides where your key is sent; chmod go-w it`,
    );
    chmodSync(file, 0o644);
    expect((await cli(['status', '--profile', 'x'], { cwd: dir })).stderr).not.toContain('other users may change');
    if (process.getuid?.() === 0) {
      chownSync(file, 65534, 65534);
      const foreign = await cli(['status', '--profile', 'x'], { cwd: dir });
      expect(foreign.code).toBe(2);
      expect(foreign.stderr).toContain(`${file}: the config file belongs to another user (uid 65534)`);
    }
  });

  it('a named pipe as --config or --api-key-file is refused at once instead of blocking for ever', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const config = await cli(['status', '--config', fifo], { cwd: dir, timeoutMs: 15_000 });
    expect(config.signal).toBeNull();
    expect(config.code).toBe(2);
    expect(config.stderr).toContain(`${fifo}: the config file is not a regular file`);
    const key = await cli(['campaigns', '--base-url', 'http://127.0.0.1:9', '--api-key-file', fifo], { cwd: dir, timeoutMs: 15_000 });
    expect(key.signal).toBeNull();
    expect(key.code).toBe(2);
    expect(key.stderr).toContain(`--api-key-file: ${fifo} is not a regular file`);
  });
});

describe('a bad base URL is named where it was set', () => {
  it('in a profile by file, profile and key; in the environment by its variable', async () => {
    const dir = project('[profiles.x]\nbase_url = "ftp://files.example.com"\n');
    const fromProfile = await cli(['campaigns', '--profile', 'x'], { cwd: dir, env: { CAMPAIGN_SYNC_API_KEY: 'k3y-for-tests' } });
    expect(fromProfile.code).toBe(2);
    expect(fromProfile.stderr).toContain(`${join(dir, 'campaign-sync.toml')}: profiles.x.base_url: must start with http:// or https://`);
    const fromEnv = await cli(['campaigns'], {
      cwd: tempDir(),
      env: { CAMPAIGN_SYNC_API_KEY: 'k3y-for-tests', CAMPAIGN_SYNC_BASE_URL: 'ftp://files.example.com' },
    });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('CAMPAIGN_SYNC_BASE_URL: must start with http:// or https://');
  });
});
