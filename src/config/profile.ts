/**
 * The config file and its profiles (an agency holds several keys): `campaign-sync.toml` in the
 * working directory, else `$XDG_CONFIG_HOME/campaign-sync/config.toml` (`~/.config/…`), or
 * `--config <file>`; `[profiles.NAME]` tables chosen by `--profile NAME`, `CAMPAIGN_SYNC_PROFILE`, or
 * the file's `default_profile`. A profile fills only what neither a flag nor the environment gave:
 * flags > environment > profile > defaults (config/defaults.ts). The file is validated whole: an
 * unknown key is an error naming the file, profile and key, and a literal API key is refused (a
 * config file is shared and backed up; the key belongs in its own 0600 file).
 */

import { lstatSync, type Stats, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { currentIo } from '../core/io.js';
import { osReason, UsageError } from '../errors.js';
import { ENV, readEnv, xdgHome } from './env.js';
import { readRegularFile } from './read-file.js';
import { PROFILE_KEYS, type Profile, type ProfileKey } from './sources.js';

/** Paths in a profile are relative to the file that holds them; `~/` is the home folder. */
const PATH_KEYS = new Set<ProfileKey>(['api_key_file', 'db', 'out', 'notify_secret_file']);
const LITERAL_KEYS = ['api_key', 'key', 'token', 'apikey', 'api-key'];

/** The file's schemas, built on first use: without a config file, zod is never loaded (startup). */
async function schemas() {
  const { z } = await import('zod');
  const value = z.union([z.string(), z.number()]);
  return {
    profileSchema: z.strictObject(
      Object.fromEntries(Object.keys(PROFILE_KEYS).map((k) => [k, value.optional()])) as Record<
        ProfileKey,
        ReturnType<typeof value.optional>
      >,
    ),
    fileSchema: z.strictObject({
      default_profile: z.string().optional(),
      profiles: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    }),
  };
}

/**
 * Whether a config file is at `path`: false when nothing is there, true when a file is. Something
 * there that cannot be followed (a symlink loop, a symlink to a missing file, a file that may not be
 * read) is an error naming it: ignoring it would run on the defaults, and send the key to the default
 * service, while the user meant the file to choose.
 */
function configAt(path: string, name: string): boolean {
  const code = (err: unknown) => (err as NodeJS.ErrnoException).code ?? 'error';
  try {
    statSync(path);
    return true;
  } catch (err) {
    let link: Stats | undefined;
    try {
      link = lstatSync(path);
    } catch {
      // Nothing to be seen there (or a folder on the way that may not be searched): no file.
      return false;
    }
    if (code(err) === 'ELOOP') throw new UsageError(`${name}: ${path} is a loop of symbolic links`);
    if (link.isSymbolicLink() && code(err) === 'ENOENT')
      throw new UsageError(`${name}: ${path} is a symbolic link to a file that does not exist`);
    throw new UsageError(`${name}: cannot read the config file ${path}: ${osReason(code(err))}`);
  }
}

/** The config file to read: `--config`, else the working directory's, else the user's; none is fine. */
export function findConfigFile(flag: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): string | undefined {
  if (flag !== undefined) {
    // resolve(cwd, '') is the working folder, which was then "not a regular file".
    if (flag === '') throw new UsageError('--config: the file name is empty; give a config file, or leave out --config');
    const path = resolve(cwd, flag);
    if (!configAt(path, '--config')) throw new UsageError(`--config: ${path} does not exist`);
    return path;
  }
  const local = join(cwd, 'campaign-sync.toml');
  if (configAt(local, 'config file')) return local;
  const base = xdgHome('xdgConfigHome', env) ?? join(homedir(), '.config');
  const user = join(base, 'campaign-sync', 'config.toml');
  return configAt(user, 'config file') ? user : undefined;
}

function expandPath(text: string, file: string): string {
  // Empty names no file (not the config file's folder): the setting refuses it, naming the key.
  if (text.trim() === '') return text;
  if (text === '~') return homedir();
  if (text.startsWith('~/')) return join(homedir(), text.slice(2));
  return isAbsolute(text) ? text : resolve(dirname(file), text);
}

/** A config file is small; anything this big is not one (and /dev/zero never ends). */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * A config file chooses where the key is sent (`base_url`) and which key file is read: one that
 * another user owns or may change (a `campaign-sync.toml` left in a shared folder) could send the
 * key to their host. Refused, as ssh refuses such a config; so is anything but a regular file (a
 * named pipe would block the read for ever, a device never end). Returns the file's mode.
 */
function checkConfigFile(file: string): number {
  let stat: Stats;
  try {
    stat = statSync(file);
  } catch (err) {
    throw new UsageError(`${file}: cannot read the config file: ${osReason((err as NodeJS.ErrnoException).code ?? 'error')}`);
  }
  if (!stat.isFile()) throw new UsageError(`${file}: the config file is not a regular file`);
  if (stat.size > MAX_CONFIG_BYTES) throw new UsageError(`${file}: ${stat.size} bytes is too big for a config file`);
  const me = process.getuid?.();
  if (me !== undefined && stat.uid !== me && stat.uid !== 0) {
    throw new UsageError(
      `${file}: the config file belongs to another user (uid ${stat.uid}), and it decides where your key is sent; use a file of your own (--config)`,
    );
  }
  if ((stat.mode & 0o022) !== 0) {
    const octal = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new UsageError(
      `${file}: other users may change the config file (mode ${octal}), and it decides where your key is sent; chmod go-w it`,
    );
  }
  return stat.mode;
}

/**
 * A TOML syntax error in one line that names where (`<file>:2:5`, an editor's jump target, and in
 * words): smol-toml's message repeats a block of the file under its first line, which is left out,
 * since a config file may hold a password (a PostgreSQL URL).
 */
function tomlProblem(file: string, err: unknown): string {
  const { line, column, message } = err as { line?: unknown; column?: unknown; message?: unknown };
  const what = String(message ?? err)
    .split('\n')[0]
    ?.replace(/^Invalid TOML document: /, '');
  if (typeof line !== 'number' || typeof column !== 'number') return `${file}: not valid TOML: ${what}`;
  return `${file}:${line}:${column}: not valid TOML: ${what} (line ${line}, column ${column}); fix the file, or give another with --config`;
}

/** Reads and validates a config file; returns its profiles. */
async function readConfig(
  file: string,
): Promise<{ defaultProfile?: string; profiles: Map<string, Record<string, string | number>>; mode: number }> {
  const mode = checkConfigFile(file);
  // stat(2) needs no right to read: a file there that may not be read fails here, and says so.
  const read = readRegularFile(file, MAX_CONFIG_BYTES);
  if ('kind' in read) {
    if (read.kind === 'error') throw new UsageError(`${file}: cannot read the config file: ${osReason(read.code)}`);
    throw new UsageError(`${file}: the config file is ${read.kind === 'too-big' ? `${read.size} bytes, too big` : 'not a regular file'}`);
  }
  let data: unknown;
  try {
    const { parse } = await import('smol-toml');
    data = parse(read.bytes.toString('utf8'));
  } catch (err) {
    throw new UsageError(tomlProblem(file, err));
  }
  const { fileSchema, profileSchema } = await schemas();
  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      throw new UsageError(`${file}: unknown top-level key ${issue.keys.join(', ')} (allowed: default_profile, [profiles.NAME])`);
    }
    const key = issue?.path.join('.');
    throw new UsageError(
      key === 'default_profile'
        ? `${file}: default_profile must be a string: the name of one of its [profiles.NAME]`
        : `${file}: ${key} must be tables of settings, [profiles.NAME]`,
    );
  }
  // A Map, not an object: a profile named constructor or toString was found on Object.prototype (and
  // ran on the defaults). A [profiles.__proto__] table, which TOML reads as a table like any other, is
  // dropped by the schema's record: refused by name rather than ignored.
  const raw = (data as { profiles?: Record<string, unknown> }).profiles;
  if (raw !== undefined && Object.hasOwn(raw, '__proto__')) {
    throw new UsageError(`${file}: profiles.__proto__: that name cannot be a profile; rename the table`);
  }
  // The same record drops a `__proto__` key inside a profile, which any other unknown key is refused as.
  for (const [name, profile] of Object.entries(raw ?? {})) {
    if (profile !== null && typeof profile === 'object' && Object.hasOwn(profile, '__proto__')) {
      throw new UsageError(`${file}: profiles.${name}: unknown key "__proto__" (allowed: ${Object.keys(PROFILE_KEYS).join(', ')})`);
    }
  }
  const profiles = new Map<string, Record<string, string | number>>();
  for (const [name, profile] of Object.entries(parsed.data.profiles ?? {})) {
    const literal = Object.keys(profile).find((k) => LITERAL_KEYS.includes(k.toLowerCase()));
    if (literal) {
      throw new UsageError(
        `${file}: profiles.${name}: "${literal}" would keep the API key in the config file; put the key alone in a 0600 file and name it with api_key_file`,
      );
    }
    const checked = profileSchema.safeParse(profile);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      if (issue?.code === 'unrecognized_keys') {
        throw new UsageError(
          `${file}: profiles.${name}: unknown key ${issue.keys.map((k) => `"${k}"`).join(', ')} (allowed: ${Object.keys(PROFILE_KEYS).join(', ')})`,
        );
      }
      throw new UsageError(`${file}: profiles.${name}.${issue?.path.join('.')}: must be a string or a number`);
    }
    profiles.set(name, checked.data as Record<string, string | number>);
  }
  return { defaultProfile: parsed.data.default_profile, profiles, mode };
}

/**
 * The profile the command runs with: `--profile` (`profile`), else CAMPAIGN_SYNC_PROFILE, else the
 * config file's default_profile; none without a config file. Its values are not checked here: each
 * is checked where it is used (config/settings.ts), named by the file, profile and key, and one that
 * a flag or the environment overrides is not checked at all.
 */
export async function readProfile(
  config: string | undefined,
  fromFlag: string | undefined,
  env: NodeJS.ProcessEnv = currentIo().env,
  cwd = process.cwd(),
): Promise<Profile | undefined> {
  const file = findConfigFile(config, env, cwd);
  const wanted = fromFlag ?? readEnv('profile', env);
  // What chose the profile, as the user wrote it: a CAMPAIGN_SYNC_PROFILE set long ago is not --profile.
  const chooser = fromFlag !== undefined ? '--profile' : ENV.profile.name;
  if (file === undefined) {
    if (wanted !== undefined) {
      throw new UsageError(
        `${fromFlag !== undefined ? `--profile ${wanted}` : `${chooser}=${wanted}`}: no config file (./campaign-sync.toml, $XDG_CONFIG_HOME/campaign-sync/config.toml, or --config <file>)`,
      );
    }
    return undefined;
  }
  const read = await readConfig(file);
  const name = wanted ?? read.defaultProfile;
  if (name === undefined) return undefined;
  const profile = read.profiles.get(name);
  if (profile === undefined) {
    const names = `(profiles: ${read.profiles.size ? [...read.profiles.keys()].join(', ') : 'none'})`;
    throw new UsageError(
      wanted === undefined
        ? `${file}: default_profile "${name}" is not one of its profiles ${names}`
        : `${chooser}: ${file} has no profile "${name}" ${names}`,
    );
  }
  const values = new Map<string, { key: string; text: string }>();
  for (const [key, raw] of Object.entries(profile)) {
    const text = String(raw);
    // A postgres:// (or other URL) `db` is not a path.
    const isPath = PATH_KEYS.has(key as ProfileKey) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text);
    values.set(PROFILE_KEYS[key as ProfileKey], { key, text: isPath ? expandPath(text, file) : text });
  }
  return { file, name, mode: read.mode, values };
}
