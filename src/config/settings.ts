/**
 * One frozen Settings per command, resolved before any work starts: every value typed and checked
 * once, each with its origin (flag, environment, profile, database, default; config/sources.ts),
 * so a message can name where a value came from (`settings.sourceOf('rateLimit').name`). The
 * defaults are the schemas' (config/schema.ts); commander declares none.
 */

import { currentIo } from '../core/io.js';
import type { Destination } from '../core/types.js';
import { UsageError } from '../errors.js';
import type {
  CampaignsSettings,
  DemoSettings,
  ExportSettings,
  ForgetSettings,
  HistorySettings,
  NotifyTestSettings,
  PassSettings,
  PullSettings,
  ReconcileSettings,
  ResetSettings,
  Sourced,
  StatusSettings,
  WatchSettings,
} from './command-settings.js';
import { dbChoice, dbKindOf, dbWarnings, resolveApi, resolvePgSchema } from './config.js';
import { DEFAULTS } from './defaults.js';
import { parseDate } from './duration.js';
import { parseListen } from './listen.js';
import { parseNotifyUrl, readNotifySecret } from './notify.js';
import { readProfile } from './profile.js';
import {
  apiSchema,
  demoSchema,
  exportSchema,
  forgetSchema,
  mirrorSchema,
  parseGiven,
  pullSchema,
  type Setting,
  syncSchema,
  watchSchema,
} from './schema.js';
import { byDefault, type Inputs, type Origin, type Profile, pick, said } from './sources.js';

export type { Origin, Source } from './sources.js';

/** Each command's settings (config/command-settings.ts). */
export interface SettingsOf {
  pull: PullSettings;
  watch: WatchSettings;
  reconcile: ReconcileSettings;
  /** `quarantine retry`: a job as reconcile's, reading only the quarantined records' pages. */
  quarantine: ReconcileSettings;
  campaigns: CampaignsSettings;
  demo: DemoSettings;
  status: StatusSettings;
  reset: ResetSettings;
  forget: ForgetSettings;
  history: HistorySettings;
  export: ExportSettings;
  notifyTest: NotifyTestSettings;
}
export type CommandName = keyof SettingsOf;

/** The values resolved so far and their origins. */
class Collector {
  readonly values: Record<string, unknown> = {};
  readonly origins: Record<string, Origin> = {};
  constructor(readonly inputs: Inputs) {}

  /** An option's value by the rule of precedence, parsed by `setting`, else its default. */
  take<T>(option: string, setting: Setting<T>, withEnv = true): T {
    const { value, origin } = parseGiven(setting, pick(option, this.inputs, withEnv), option);
    return this.set(option, value, origin);
  }

  /** A switch or a list: flags alone. */
  flag<T>(option: string, fallback: T): T {
    const given = this.inputs.flags[option] as T | undefined;
    return this.set(option, given ?? fallback, given === undefined ? byDefault(option) : { source: 'flag', name: `--${kebab(option)}` });
  }

  set<T>(option: string, value: T, origin: Origin): T {
    this.values[option] = value;
    this.origins[option] = origin;
    return value;
  }

  /** The settings, deep-frozen, with `sourceOf`. */
  done<S>(): S {
    const origins = deepFreeze({ ...this.origins });
    const sourceOf = (option: string): Origin => origins[option] ?? byDefault(option);
    return deepFreeze({ ...this.values, sourceOf }) as S;
  }
}

function kebab(option: string): string {
  return option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Freezes an object and everything it holds (a URL's own state cannot be frozen; nothing here changes one). */
function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const inner of Object.values(value as object)) deepFreeze(inner);
  return value;
}

function output(c: Collector): void {
  c.flag('json', false);
  c.flag('quiet', false);
  c.flag('verbose', false);
}

/**
 * --db, the backend it names and what to warn of it (a password in plain sight), --pg-schema, and
 * --file-mode for a command that may create the mirror's files (`creates`).
 */
function mirror(c: Collector, dbFallback: string = DEFAULTS.db, withEnv = true, creates = false): void {
  const db = pick('db', c.inputs, withEnv);
  const path = c.set('db', db?.text ?? dbFallback, db?.origin ?? byDefault('db'));
  const origin = c.origins.db as Origin;
  // An empty value (an unset shell variable: --db "$MIRROR") names no file: refused before anything opens.
  if (path.trim() === '') throw new UsageError(`${origin.name}: is empty; give the mirror's file or postgres:// URL`);
  c.set('dbKind', dbKindOf(path), origin);
  c.set('dbWarnings', dbWarnings(dbChoice(path, origin)), origin);
  const schema = pick('pgSchema', c.inputs);
  c.set('pgSchema', resolvePgSchema(schema?.text, schema?.origin.name), schema?.origin ?? byDefault('pgSchema'));
  if (creates) c.take('fileMode', mirrorSchema.fileMode);
  else c.set('fileMode', DEFAULTS.fileMode, byDefault('fileMode'));
}

/**
 * --format and --out. An NDJSON folder given without a format means NDJSON: `--out` alone went into
 * SQLite without a word, and moving to the folder then took a reset and a full re-read. Given with
 * `--format sqlite`, the two contradict each other.
 */
function destination(c: Collector, withEnv: boolean): void {
  const format = pick('format', c.inputs, withEnv);
  const out = pick('out', c.inputs, withEnv);
  const chosen = format === undefined ? undefined : parseGiven(syncSchema.format, format, 'format');
  if (chosen?.value === 'sqlite' && out !== undefined) {
    throw new UsageError(
      `${out.origin.name} names an NDJSON folder, but ${said(chosen.origin, 'sqlite')} writes records into --db; drop one of them`,
    );
  }
  if (chosen !== undefined) c.set('format', chosen.value, chosen.origin);
  else if (out !== undefined)
    c.set('format', 'ndjson', { source: out.origin.source, name: `${out.origin.name} (an NDJSON folder)`, implied: true });
  else c.set('format', DEFAULTS.format, byDefault('format'));
  c.set('out', out?.text ?? DEFAULTS.out, out?.origin ?? byDefault('out'));
}

/** The pass: what to read and how, each value checked, and the combinations that make no sense refused. */
function pass(c: Collector, command: 'pull' | 'watch' | 'reconcile' | 'demo'): void {
  const withEnv = command !== 'demo';
  destination(c, withEnv);
  c.take('reportType', syncSchema.reportType);
  c.take('pageSize', syncSchema.pageSize);
  c.take('concurrency', syncSchema.concurrency);
  c.take('lease', syncSchema.lease);
  // reconcile re-reads everything and the demo pulls once: neither takes --lookback (nor a profile's).
  const lookback =
    command === 'pull' || command === 'watch'
      ? c.take('lookback', syncSchema.lookback)
      : c.set('lookback', undefined, byDefault('lookback'));
  // reconcile compares with the service and the demo is a fresh mirror: retention is a pull's and a watch's.
  if (command === 'pull' || command === 'watch') c.take('retention', syncSchema.retention);
  else c.set('retention', undefined, byDefault('retention'));
  if (command === 'pull' || command === 'watch') c.take('contract', syncSchema.contract);
  else c.set('contract', DEFAULTS.contract, byDefault('contract'));
  // A pull from cron leaves a busy run or stream to its worker; watch refuses --if-idle (watchOnly).
  if (command === 'pull') c.flag('ifIdle', false);
  else c.set('ifIdle', false, byDefault('ifIdle'));
  c.flag('campaign', [] as string[]);
  const since = c.flag<string | undefined>('since', undefined);
  const until = c.flag<string | undefined>('until', undefined);
  if (since !== undefined) c.values.since = parseDate(since, '--since');
  if (until !== undefined) c.values.until = parseDate(until, '--until');
  const full = c.flag<boolean>('full', false) === true;
  if (since && until && since > until) throw new UsageError(`--since ${since} is after --until ${until}`);
  if (full && (since || until)) throw new UsageError('--full re-reads everything; it does not go with --since/--until');
  // Ten years back is before any campaign; more is a typo (and dates before year 0 are not dates).
  if (lookback !== undefined && lookback > 3650 * 86_400_000) {
    const text = pick('lookback', c.inputs)?.text;
    throw new UsageError(`${c.origins.lookback?.name}: "${text}" reaches back more than 3650d; use pull --full to re-read everything`);
  }
  if (lookback !== undefined && (full || since || until))
    throw new UsageError('--lookback re-reads a recent window after the incremental read; it does not go with --full or --since/--until');
  const type = c.flag<string | undefined>('type', undefined);
  if (type !== undefined && type !== 'session' && type !== 'role') throw new UsageError('--type: must be session or role');
}

/** watch's own settings, and the options of a pull it refuses with what to run instead. */
function watchOnly(c: Collector): void {
  c.take('interval', watchSchema.interval);
  c.take('maxCycles', watchSchema.maxCycles);
  c.take('lookbackEvery', watchSchema.lookbackEvery);
  c.take('maxAge', watchSchema.maxAge);
  c.take('maxStaleness', watchSchema.maxStaleness);
  const listen = c.inputs.flags.metricsListen as string | undefined;
  c.flag('metricsAllowRemote', false);
  c.set(
    'metricsListen',
    listen === undefined ? undefined : parseListen(listen, c.inputs.flags.metricsAllowRemote === true),
    byDefault('metricsListen'),
  );
  if (listen !== undefined) c.origins.metricsListen = { source: 'flag', name: '--metrics-listen' };
  // A watch runs until stopped: a second one exiting 0 in silence would read as a clean stop to
  // systemd (and Restart=always would start it again and again). Exit 75 says who holds the lock.
  if (c.inputs.flags.ifIdle)
    throw new UsageError(
      '--if-idle is for `pull` from cron; a watch runs until stopped: run one watch per SQLite database (a second exits 75), or several on a PostgreSQL mirror (they share its streams)',
    );
  // Every pass would re-read everything (or the same window) and spend the budget on it.
  if (c.inputs.flags.full)
    throw new UsageError('watch --full would re-read everything on every pass; run `campaign-sync pull --full` once instead');
  if (c.inputs.flags.since !== undefined || c.inputs.flags.until !== undefined)
    throw new UsageError(
      'watch --since/--until would re-read the same window on every pass; run `campaign-sync pull --since …` once instead',
    );
}

/** What `export` reads and where it writes; the days checked. */
function exportOnly(c: Collector): void {
  c.flag('table', '');
  c.flag<string | undefined>('output', undefined);
  c.flag<string | undefined>('columns', undefined);
  c.flag<string | undefined>('sinceLast', undefined);
  c.flag<string | undefined>('asOf', undefined);
  c.flag<string | undefined>('campaign', undefined);
  c.flag('rawCsv', false);
  c.flag('safeCsv', false);
  const since = c.flag<string | undefined>('since', undefined);
  const until = c.flag<string | undefined>('until', undefined);
  if (since !== undefined) c.values.since = parseDate(since, '--since');
  if (until !== undefined) c.values.until = parseDate(until, '--until');
  if (c.values.since && c.values.until && (c.values.since as string) > (c.values.until as string))
    throw new UsageError(`--since ${c.values.since} is after --until ${c.values.until}`);
}

/** pull's --metrics-file and its mode. */
function metricsFile(c: Collector): void {
  const file = c.flag<string | undefined>('metricsFile', undefined);
  const mode = c.take('metricsFileMode', pullSchema.metricsFileMode);
  if (mode !== undefined && file === undefined) throw new UsageError('--metrics-file-mode is the mode of --metrics-file: give both');
}

/** The API, --notify (held to --allow-insecure-http as the base URL is), and --max-age's default for it. */
function job(c: Collector): void {
  const { config, origins } = resolveApi(c.inputs);
  c.set('api', config, origins.baseUrl as Origin);
  Object.assign(c.origins, origins);
  const insecure = c.flag<boolean>('allowInsecureHttp', false) === true;
  c.flag('switchService', false);
  const notify = c.inputs.flags.notify as string | undefined;
  c.set(
    'notify',
    notify === undefined ? undefined : parseNotifyUrl(notify, insecure),
    notify === undefined ? byDefault('notify') : { source: 'flag', name: '--notify' },
  );
  notifySecret(c, notify !== undefined, config.warnings);
  if (!('maxAge' in c.values)) c.take('maxAge', watchSchema.maxAge);
}

/**
 * --notify-secret-file (or CAMPAIGN_SYNC_NOTIFY_SECRET, or a profile's notify_secret_file), read
 * only when there is something to sign: a profile or a variable set for every run does not need
 * --notify on each, but the flag alone asks for nothing and is refused. Its file's warnings join
 * `warnings`, which the command prints once.
 */
function notifySecret(c: Collector, notifying: boolean, warnings: string[] | undefined): void {
  const given = pick('notifySecretFile', c.inputs);
  if (given?.origin.source === 'flag' && !notifying)
    throw new UsageError('--notify-secret-file signs the POSTs of --notify: give --notify <url> too');
  if (given === undefined || !notifying) {
    c.set('notifySecret', undefined, byDefault('notifySecretFile'));
    return;
  }
  const read = readNotifySecret(given);
  warnings?.push(...read.warnings);
  c.set('notifySecret', read.secret, given.origin);
}

/**
 * A command's settings from its flags (commander's values: only what was typed), the environment
 * and the config file's chosen profile. Checks every value, in the order the command would use
 * them, and throws the first problem as a UsageError naming where the value came from.
 */
export function resolveSettings<C extends CommandName>(
  command: C,
  flags: object,
  env: NodeJS.ProcessEnv = currentIo().env,
  profile?: Profile,
): SettingsOf[C] {
  const c = new Collector({ flags: flags as Record<string, unknown>, env, profile });
  switch (command) {
    case 'pull':
    case 'watch':
    case 'reconcile':
    case 'quarantine':
      output(c);
      if (command === 'watch') watchOnly(c);
      pass(c, command === 'quarantine' ? 'reconcile' : command);
      job(c);
      mirror(c, DEFAULTS.db, true, true);
      if (command === 'pull') metricsFile(c);
      if (command === 'reconcile' || command === 'quarantine') c.flag('prune', false);
      break;
    case 'campaigns':
      output(c);
      mirror(c, DEFAULTS.db, true, true);
      job(c);
      break;
    case 'demo': {
      // The demo's own database (never CAMPAIGN_SYNC_DB: a mirror of the real service), made-up records.
      output(c);
      mirror(c, DEFAULTS.demoDb, false);
      c.take('seed', demoSchema.seed);
      c.take('campaigns', demoSchema.campaigns);
      c.take('records', demoSchema.records);
      pass(c, 'demo');
      c.set('timeoutMs', c.take('timeout', apiSchema.timeout), byDefault('timeout'));
      c.take('maxRetries', apiSchema.maxRetries);
      c.set('maxRetryWaitMs', c.take('maxRetryWait', apiSchema.maxRetryWait), byDefault('maxRetryWait'));
      c.set('notify', undefined, byDefault('notify'));
      c.set('notifySecret', undefined, byDefault('notifySecretFile'));
      c.take('maxAge', watchSchema.maxAge);
      c.set('switchService', true, byDefault('switchService'));
      break;
    }
    case 'status':
      output(c);
      mirror(c);
      c.flag('check', false);
      c.flag('nagios', false);
      c.flag<string | undefined>('maxAge', undefined);
      break;
    case 'reset':
      output(c);
      mirror(c);
      c.flag('campaign', [] as string[]);
      c.flag('all', false);
      break;
    case 'forget': {
      output(c);
      mirror(c);
      const user = c.flag<string | undefined>('user', undefined);
      const olderThan = c.take('olderThan', forgetSchema.olderThan, false);
      c.flag('yes', false);
      c.flag('dryRun', false);
      // Together they could mean "their records older than" or "theirs, and everyone's older than": say which by running two.
      if (user !== undefined && olderThan !== undefined)
        throw new UsageError(
          'forget: give --user or --older-than, not both (run `forget --user` and `forget --older-than` one after the other)',
        );
      break;
    }
    case 'history':
      output(c);
      mirror(c);
      c.flag<string | undefined>('user', undefined);
      c.flag<string | undefined>('record', undefined);
      break;
    case 'notifyTest': {
      output(c);
      const insecure = c.flag<boolean>('allowInsecureHttp', false) === true;
      const url = c.inputs.flags.notify as string | undefined;
      if (url === undefined) throw new UsageError('notify-test: give the webhook with --notify <url>, as pull and watch take it');
      c.set('notify', parseNotifyUrl(url, insecure), { source: 'flag', name: '--notify' });
      const warnings: string[] = [];
      notifySecret(c, true, warnings);
      c.set('warnings', warnings, byDefault('warnings'));
      break;
    }
    case 'export':
      output(c);
      mirror(c);
      // export's format is its own (csv, ndjson, parquet): CAMPAIGN_SYNC_FORMAT is pull's.
      c.take('format', exportSchema.format, false);
      exportOnly(c);
      break;
  }
  return c.done<SettingsOf[C]>();
}

/** A pull's pass settings alone, from flags and environment (sync tests check them without an API). */
export function resolvePass(flags: object, env: NodeJS.ProcessEnv = currentIo().env): PassSettings {
  const c = new Collector({ flags: flags as Record<string, unknown>, env });
  pass(c, 'pull');
  return c.done<PassSettings & Sourced>();
}

/** The command's settings with the config file's profile read first (config/profile.ts). */
export async function loadSettings<C extends CommandName>(
  command: C,
  flags: { config?: string; profile?: string },
  env: NodeJS.ProcessEnv = currentIo().env,
  cwd = process.cwd(),
): Promise<SettingsOf[C]> {
  const profile = await readProfile(flags.config, flags.profile, env, cwd);
  return resolveSettings(command, flags, env, profile);
}

/**
 * The settings with the destination a database remembers (what it fed last), used when no flag,
 * variable or profile chose one: its format and folder then come from the database.
 */
export function rememberDestination<S extends Sourced & { readonly format: string; readonly out: string }>(
  settings: S,
  remembered: Destination,
): S {
  const origin: Origin = { source: 'database', name: 'the destination this database fed last' };
  const origins = (option: string) =>
    option === 'format' || (option === 'out' && remembered.kind === 'ndjson') ? origin : settings.sourceOf(option);
  const out = remembered.kind === 'ndjson' ? remembered.out : settings.out;
  return deepFreeze({ ...settings, format: remembered.kind, out, sourceOf: origins });
}
