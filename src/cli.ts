/**
 * The commander program. It only declares commands and options; each command's module is imported
 * when that command runs, so `campaign-sync --help` loads nothing heavy.
 */

import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CHOICES, DEFAULTS, shownDefault } from './config/defaults.js';
import { xdgHome } from './config/env.js';
import type { CommandName, SettingsOf } from './config/settings.js';
import { currentIo, type Io } from './core/io.js';
import { packageVersion } from './core/version.js';

/** What an action leaves for main.ts: the exit code. */
export interface RunResult {
  exitCode: number;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * An option with a fixed set of values, taken in any case (`--report-type detailed`), with `_` for
 * `-` (`--table session_results`, the SQL name): the value passed on is the listed spelling. The
 * choices stay on the option for --help and the completion scripts.
 */
function enumOption(flags: string, description: string, values: readonly string[]): Option {
  const norm = (v: string) => v.toLowerCase().replace(/_/g, '-');
  return new Option(flags, description).choices(values).argParser((given: string) => {
    const hit = values.find((v) => norm(v) === norm(given.trim()));
    if (hit === undefined) throw new InvalidArgumentError(`must be one of ${values.join(', ')}.`);
    return hit;
  });
}

/**
 * A command's examples, each wrapped to the help's width as a shell line goes on: between words, a
 * quoted word kept whole, each line but the last ending in ` \` (pasted, it is still one command).
 */
function example(cmd: Command, ...lines: string[]): Command {
  return cmd.addHelpText('after', ({ error, command }) => {
    const out = command.configureOutput();
    const width = (error ? out.getErrHelpWidth?.() : out.getOutHelpWidth?.()) ?? 80;
    return `\nExamples:\n${lines.map((l) => shellLines(l, width)).join('\n')}\n`;
  });
}

/**
 * `line` as `  $ ` and the words that fit `width`, then `      ` and the next ones, joined by ` \`.
 * A comment (` # …`) that does not fit after the command goes on a line of its own above it: a
 * backslash does not carry a comment on, and the words after it would run as a command.
 */
export function shellLines(line: string, width: number): string {
  const hash = line.indexOf(' # ');
  if (hash >= 0) {
    const command = shellLines(line.slice(0, hash), width);
    const comment = line.slice(hash + 1);
    if (!command.includes('\n') && command.length + 1 + comment.length <= width) return `${command} ${comment}`;
    return `  ${comment}\n${command}`;
  }
  // Words, a quoted part (with its spaces) kept in its word.
  const words = line.match(/(?:[^\s'"]+|'[^']*'|"[^"]*")+/g) ?? [line];
  const out: string[] = [];
  let current = '  $';
  for (const word of words) {
    // Room for the word and, should a line follow, the ` \` that says so.
    if (current.trim() !== '$' && current.length + 1 + word.length + 2 > width) {
      out.push(`${current} \\`);
      current = `      ${word}`;
    } else current = `${current} ${word}`;
  }
  return [...out, current].join('\n');
}

// The request log, on every command that calls the API.
const VERBOSE = '-v, --verbose';
const VERBOSE_HELP = 'log every HTTP attempt, retry and rate-limit pause on stderr (JSON lines with --json)';

function apiOptions(cmd: Command): Command {
  return cmd
    .option('--base-url <url>', 'API base URL without /v1 (env CAMPAIGN_SYNC_BASE_URL)')
    .option('--api-key-file <path>', 'file holding the API key (env CAMPAIGN_SYNC_API_KEY)')
    .option('--rate-limit <rate>', `request budget, N or N/DURATION (env CAMPAIGN_SYNC_RATE_LIMIT)${shownDefault('rateLimit')}`)
    .option('--timeout <duration>', `bound on each whole request${shownDefault('timeout')}`)
    .option('--max-retries <n>', `retries per request (429, 5xx, timeouts, resets)${shownDefault('maxRetries')}`)
    .option(
      '--max-retry-wait <duration>',
      `longest Retry-After to wait; a longer one fails the stream at once${shownDefault('maxRetryWait')}`,
    )
    .addOption(
      enumOption(
        '--compression <mode>',
        `gzip response bodies: auto (all but loopback hosts), gzip or off${shownDefault('compression')}`,
        CHOICES.compression,
      ),
    )
    .option('--allow-insecure-http', 'allow plain http:// to a non-loopback host')
    .option(
      '--switch-service',
      'the service moved to --base-url: record it as the one this mirror mirrors (another base URL is refused without it)',
    )
    .option(VERBOSE, VERBOSE_HELP);
}

/** The user's config file as findConfigFile reads it (config/profile.ts): XDG_CONFIG_HOME's, when set. */
function userConfigFile(): string {
  const base = xdgHome('xdgConfigHome');
  return base === undefined ? '~/.config/campaign-sync/config.toml' : join(base, 'campaign-sync', 'config.toml');
}

/** --file-mode, on the commands that may create a mirror's files. */
function fileModeOption(cmd: Command): Command {
  return cmd.addOption(
    enumOption(
      '--file-mode <mode>',
      `new database and NDJSON files and folders: private (0600, 0700) or group (0640, 0750: the group reads them); existing ones keep their mode${shownDefault('fileMode')}`,
      CHOICES.fileMode,
    ),
  );
}

function dbOption(cmd: Command): Command {
  return cmd
    .option('--db <path>', `SQLite database, or postgres://… for a team mirror in PostgreSQL (env CAMPAIGN_SYNC_DB)${shownDefault('db')}`)
    .option('--pg-schema <name>', `with a postgres:// --db: the schema of the mirror${shownDefault('pgSchema')}`)
    .option('--config <file>', `config file with [profiles.NAME] (default: ./campaign-sync.toml, then ${userConfigFile()})`)
    .option('--profile <name>', "profile of the config file to use (env CAMPAIGN_SYNC_PROFILE; default: the file's default_profile)");
}

/**
 * The command's settings (config/settings.ts): its flags, the environment and the config file's
 * profile, checked once, frozen. Commander's options object is only read.
 */
async function settings<C extends CommandName>(command: C, opts: Record<string, unknown>): Promise<SettingsOf[C]> {
  const { loadSettings } = await import('./config/settings.js');
  return loadSettings(command, opts);
}

function outputOptions(cmd: Command): Command {
  return cmd.option('--json', 'print one JSON document on stdout instead of text').option('--quiet', 'print only errors');
}

function syncOptions(cmd: Command, watch = false): Command {
  // watch refuses --since, --until and --full with a line that says what to run instead (they would
  // re-read the same records every pass): taken, but not offered in its --help.
  const once = (flags: string, description: string) => {
    const option = new Option(flags, description);
    return watch ? option.hideHelp() : option;
  };
  return fileModeOption(cmd)
    .option('--campaign <id-or-name>', 'only this campaign (repeatable)', collect)
    .addOption(enumOption('--type <type>', 'only this kind of campaign', CHOICES.type))
    .addOption(enumOption('--report-type <type>', `role report to mirror${shownDefault('reportType')}`, CHOICES.reportType))
    .addOption(
      enumOption(
        '--contract <mode>',
        `strict: a new field or enumeration value fails the stream, its page unstored${shownDefault('contract')}`,
        CHOICES.contract,
      ),
    )
    .addOption(
      enumOption(
        '--format <format>',
        'where records go (default: what this database fed last; else ndjson with --out, sqlite without)',
        CHOICES.format,
      ),
    )
    .option('--out <dir>', `NDJSON folder; given alone, it means --format ndjson (default: ${DEFAULTS.out})`)
    .option('--page-size <n>', `records per request, 1 to 100${shownDefault('pageSize')}`)
    .option('--concurrency <n>', `streams synced at once (one shared request budget)${shownDefault('concurrency')}`)
    .option('--lease <duration>', `PostgreSQL: a stream stays a worker's this long without a renewal${shownDefault('lease')}`)
    .addOption(once('--since <date>', 'backfill from this day (YYYY-MM-DD); checkpoints untouched'))
    .addOption(once('--until <date>', 'backfill up to this day (YYYY-MM-DD); checkpoints untouched'))
    .addOption(once('--full', 'ignore checkpoints, re-read everything, then set them'))
    .option(
      '--lookback <duration>',
      'after the incremental read, re-read results created since now minus this (e.g. 7d); checkpoints untouched',
    )
    .option(
      '--retention <duration>',
      'keep results for this long (e.g. 365d): older ones are not stored, and those stored are erased at most once a day',
    )
    .option('--notify <url>', "POST a JSON document here when a stream's state changes (failing, stale, recovered, unlisted)")
    .option(NOTIFY_SECRET, NOTIFY_SECRET_HELP);
}

const NOTIFY_SECRET = '--notify-secret-file <path>';
const NOTIFY_SECRET_HELP =
  'file holding a secret that signs each --notify POST (X-Campaign-Sync-Signature-256, HMAC-SHA256; env CAMPAIGN_SYNC_NOTIFY_SECRET)';

/**
 * A commander error in our one-line style, without the `campaign-sync: ` prefix: `unknown option
 * '--bogus' (add --help for usage)`. main.ts puts the same words in the --json document.
 */
export function commanderMessage(text: string): string {
  return `${text
    .replace(/^error: /, '')
    .replace(/\s+/g, ' ')
    .trim()} (add --help for usage)`;
}

/**
 * A command's term in the top-level help, without commander's `[options]` (every command has
 * options, and `<command> --help` lists them): `quarantine <action> [ids...]`. Commander wraps the
 * descriptions only when the column left beside the longest term is wide enough (minWidthToWrap);
 * with `[options]` in every term it was not at 80 columns, and the terminal broke words mid-line.
 */
function subcommandTerm(cmd: Command): string {
  const args = cmd.registeredArguments.map((a) => {
    const name = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${name}>` : `[${name}]`;
  });
  return [cmd.name(), ...args].join(' ');
}

/** Narrowest description column commander still wraps (its default, 40, leaves 80 columns unwrapped next to a long term). */
const MIN_WRAP = 24;

/** The terminal's width for help, or commander's 80 when the output is not a terminal. */
function helpWidth(io: Io): number {
  return io.stdout.isTTY === true && io.stdout.columns !== undefined && io.stdout.columns > 0 ? io.stdout.columns : 80;
}

/** `text` wrapped at spaces to lines of at most `width` characters (a longer word stays whole). */
export function wrapWords(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line].join('\n');
}

/**
 * Builds the program; actions record their exit code in `result`. `nagios`: the run is `status
 * --nagios`, a Nagios plugin; a usage error is its UNKNOWN line on stdout (main.ts), not a line here.
 */
export function buildProgram(signal: AbortSignal, result: RunResult, io: Io = currentIo(), opts: { nagios?: boolean } = {}): Command {
  const program = new Command('campaign-sync')
    .description('Mirror the Campaign Evaluation Results Service into SQLite, NDJSON or PostgreSQL.')
    .version(packageVersion(), '-V, --version')
    .exitOverride()
    // Commander's errors in our one-line style: `campaign-sync: unknown option '--bogus' (add --help for usage)`.
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => {
        if (!opts.nagios) write(`campaign-sync: ${commanderMessage(text)}\n`);
      },
      // The run's terminal, not the process's: help is wrapped at the width it is shown at.
      getOutHelpWidth: () => helpWidth(io),
      getErrHelpWidth: () => helpWidth(io),
    })
    .configureHelp({ sortOptions: false, subcommandTerm, minWidthToWrap: MIN_WRAP })
    .addHelpText(
      'after',
      () =>
        `\n${wrapWords('New here? `campaign-sync demo` mirrors a built-in simulator of the service: no key, no network.', helpWidth(io))}\n`,
    );

  const done = (code: number) => {
    result.exitCode = code;
  };

  example(
    outputOptions(
      fileModeOption(
        dbOption(apiOptions(program.command('campaigns').description('list the campaigns the key can access and store them'))),
      ),
    ),
    'campaign-sync campaigns --base-url https://api.example.com --api-key-file ~/.campaign-sync-key',
    'campaign-sync campaigns --json | jq ".data[].name"',
  ).action(async (opts) => done(await (await import('./commands/campaigns.js')).campaigns(await settings('campaigns', opts), signal)));

  example(
    outputOptions(
      syncOptions(dbOption(apiOptions(program.command('pull').description('one sync pass of every campaign, then exit (for cron)')))),
    )
      .option('--if-idle', 'when another campaign-sync holds the lock, exit 0 at once and say nothing (cron, as flock -n)')
      .option(
        '--metrics-file <path>',
        "after the pass, write the Prometheus metrics here atomically (node_exporter's textfile collector; name it *.prom)",
      )
      .option(
        '--metrics-file-mode <mode>',
        "the metrics file's mode, octal (e.g. 0640); without it, 0644 less the umask (it holds no personal data)",
      ),
    'campaign-sync pull --base-url https://api.example.com --api-key-file ~/.campaign-sync-key',
    'campaign-sync pull --quiet --if-idle   # from cron: a tick during a long pull stays silent',
    'campaign-sync pull --campaign role-2-trust-safety-reviewers --report-type OVERALL',
    'campaign-sync pull --format ndjson --out ./warehouse-drop',
    'campaign-sync pull --since 2026-01-01 --until 2026-01-31',
  ).action(async (opts) => done(await (await import('./commands/pull.js')).pull(await settings('pull', opts), signal)));

  example(
    outputOptions(
      syncOptions(dbOption(apiOptions(program.command('watch').description('pull again and again; stops on SIGINT/SIGTERM/SIGHUP'))), true),
    )
      .option('--interval <duration>', `time from the start of one pass to the next${shownDefault('interval')}`)
      .option('--max-cycles <n>', 'stop after this many passes')
      // Refused with a line that says what to do instead (watch.ts): taken, but not offered in --help.
      .addOption(new Option('--if-idle').hideHelp())
      .option('--lookback-every <duration>', `with --lookback: re-read the window at most this often${shownDefault('lookbackEvery')}`)
      .option('--metrics-listen <host:port>', 'serve Prometheus /metrics and /healthz here (loopback; port 0 picks one)')
      .option('--metrics-allow-remote', 'allow --metrics-listen on a non-loopback address (no authentication)')
      .option('--max-age <duration>', `/healthz: longest time since a stream's last success${shownDefault('maxAge')}`)
      .option(
        '--max-staleness <duration>',
        `when a pass cannot afford every stream: check each at least this often, active ones first${shownDefault('maxStaleness')}`,
      ),
    'campaign-sync watch --interval 2m',
    'campaign-sync watch --max-cycles 3 --interval 10s --json',
  ).action(async (opts) => done(await (await import('./commands/watch.js')).watch(await settings('watch', opts), signal)));

  example(
    outputOptions(dbOption(program.command('status').description('show each stream: cursor, records, last success, last error')))
      .option('--check', 'for monitoring: exit 0 if every stream is fresh and none failing, 4 if some are not, 5 if none is')
      .option('--max-age <duration>', `with --check: longest time since a stream's last success${shownDefault('maxAge')}`)
      .option('--nagios', 'with --check: a Nagios plugin: one status line with perfdata, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN'),
    'campaign-sync status',
    'campaign-sync status --json',
    'campaign-sync status --check --max-age 15m',
    'campaign-sync status --check --nagios --max-age 15m',
  ).action(async (opts) => done(await (await import('./commands/status.js')).status(await settings('status', opts))));

  example(
    dbOption(
      program
        .command('export')
        .description('stream a table of the mirror as CSV, NDJSON or Parquet')
        .addOption(
          enumOption(
            '--table <table>',
            'what to export (required): a table, or an analyst view (results, latest_results, skill_scores); the SQL names work too',
            CHOICES.table,
          ).makeOptionMandatory(),
        )
        .addOption(enumOption('--format <format>', `output format${shownDefault('exportFormat')}`, CHOICES.exportFormat))
        .option('-o, --output <file>', 'write to this file (0600) instead of stdout (- is stdout)')
        .option('--columns <list>', 'only these columns, in this order, comma-separated (e.g. candidate_email,score)')
        .option(
          '--since-last <consumer>',
          "only what changed since this consumer's previous export (session-results, role-results; deletions as rows with _deleted_at); needs -o",
        )
        .option(
          '--as-of <timestamp>',
          'session-results or role-results as the mirror held them at this time (ISO 8601, UTC unless it says), deletions included',
        )
        .option('--campaign <id-or-name>', 'only rows of this campaign')
        .option('--since <date>', 'only rows created on or after this day (YYYY-MM-DD)')
        .option('--until <date>', 'only rows created on or before this day (YYYY-MM-DD)')
        .option('--raw-csv', 'do not neutralise cells that spreadsheets would run as formulas')
        .option('--safe-csv', "neutralise formula cells in a --since-last CSV too (a loader's file is exact values by default)")
        .option('--json', 'with -o: print a summary document (table, format, rows, path) on stdout')
        .option('--quiet', 'print only errors'),
    ),
    'campaign-sync export --table session-results --format csv -o results.csv',
    'campaign-sync export --table role-results --format ndjson --since 2026-01-01 | gzip > roles.ndjson.gz',
    'campaign-sync export --table eval-results --format parquet -o evals.parquet',
    'campaign-sync export --table latest_results --columns campaign_name,candidate_email,score,cefr -o latest.csv',
  ).action(async (opts) =>
    done(await (await import('./commands/export.js')).exportTable(await settings('export', opts), io.stdout, signal)),
  );

  example(
    outputOptions(
      dbOption(
        program
          .command('reset')
          .description('forget checkpoints (not data) so the next pull re-reads')
          .option('--campaign <id-or-name>', 'only this campaign (repeatable)', collect)
          .option('--all', 'forget every checkpoint (without it, reset asks on a terminal and refuses elsewhere)'),
      ),
    ),
    'campaign-sync reset --campaign 1fd25390-c20a-4b40-9a80-74259b12ee9c',
    'campaign-sync reset --all',
  ).action(async (opts) => done(await (await import('./commands/reset.js')).reset(await settings('reset', opts), signal)));

  example(
    outputOptions(
      fileModeOption(
        dbOption(
          apiOptions(
            program
              .command('reconcile')
              .description('re-read every stream from the start and report records added, changed and gone (deleted by the service)'),
          ),
        ),
      ),
    )
      .option('--campaign <id-or-name>', 'only this campaign (repeatable)', collect)
      .addOption(enumOption('--type <type>', 'only this kind of campaign', CHOICES.type))
      .addOption(enumOption('--report-type <type>', `role report to compare${shownDefault('reportType')}`, CHOICES.reportType))
      .addOption(enumOption('--format <format>', 'destination to compare (default: the one this database feeds)', CHOICES.format))
      .option('--out <dir>', 'NDJSON folder (default: the one this database feeds)')
      .option('--page-size <n>', `records per request, 1 to 100${shownDefault('pageSize')}`)
      .option('--prune', 'delete gone records from the mirror (NDJSON: append one tombstone line each)'),
    'campaign-sync reconcile',
    'campaign-sync reconcile --campaign session-5-support-agents-emea --prune --json',
  ).action(async (opts) =>
    done(await (await import('./commands/reconcile.js')).reconcileStreams(await settings('reconcile', opts), signal)),
  );

  example(
    outputOptions(
      dbOption(
        program
          .command('forget')
          .description('erase one candidate from the local copy: their rows in every table and their lines in the NDJSON files')
          .option('--user <email-or-id>', 'the candidate: user id, or e-mail (any case)')
          .option('--older-than <duration>', 'instead: every result dated (created_at) before now minus this, e.g. 365d')
          .option('--dry-run', 'with --older-than: show what it would erase, table by table, and erase nothing')
          .option('--yes', 'with --older-than: erase without a question (needed where none can be asked: cron, a pipe, --json)'),
      ),
    ),
    'campaign-sync forget --user jane.doe@example.com',
    'campaign-sync forget --user 0b6f2a8e-1c3d-4e5f-8a9b-0c1d2e3f4a5b --json',
    'campaign-sync forget --older-than 365d --dry-run',
    'campaign-sync forget --older-than 365d --yes   # from cron',
  ).action(async (opts) => done(await (await import('./commands/forget.js')).forget(await settings('forget', opts), signal)));

  example(
    outputOptions(
      dbOption(
        program
          .command('history')
          .description(
            "a candidate's results over time: every version the mirror kept (score, recommendation, when seen), deletions included",
          )
          .option('--user <email-or-id>', 'the candidate: user id, or e-mail (any case)')
          .option('--record <id>', 'one result, by its id'),
      ),
    ),
    'campaign-sync history --user jane.doe@example.com',
    'campaign-sync history --record 5b0e8c1a-6f1d-4f2e-9c1b-2a3d4e5f6a7b --json',
  ).action(async (opts) => done(await (await import('./commands/history.js')).history(await settings('history', opts))));

  example(
    outputOptions(
      dbOption(
        apiOptions(
          program
            .command('quarantine')
            .description('list, retry or drop the records that failed the record rules and were kept apart while their streams went on')
            .argument('<action>', 'list, retry or drop')
            .argument('[ids...]', 'ids of `quarantine list` (retry: all when none; drop: these, or --all)')
            .option('--all', 'drop: every quarantined record'),
        ),
      ),
    ),
    'campaign-sync quarantine list',
    'campaign-sync quarantine retry',
    'campaign-sync quarantine drop 3 4',
  ).action(async (action: string, ids: string[], opts) =>
    done(
      await (await import('./commands/quarantine.js')).quarantine(
        action,
        ids,
        opts,
        action === 'retry' ? await settings('quarantine', opts) : await settings('status', opts),
        signal,
      ),
    ),
  );

  example(
    outputOptions(
      program
        .command('notify-test')
        .description('send one test notification to a --notify webhook, signed as pull and watch sign theirs')
        .option('--notify <url>', 'the webhook, as pull and watch take it (required)')
        .option(NOTIFY_SECRET, NOTIFY_SECRET_HELP)
        .option('--allow-insecure-http', 'allow plain http:// to a non-loopback host')
        .option('--config <file>', `config file with [profiles.NAME] (default: ./campaign-sync.toml, then ${userConfigFile()})`)
        .option('--profile <name>', "profile of the config file to use (env CAMPAIGN_SYNC_PROFILE; default: the file's default_profile)"),
    ),
    'campaign-sync notify-test --notify https://hooks.slack.com/services/T000/B000/XXXX',
    'campaign-sync notify-test --notify https://alerts.example.com/campaign-sync --notify-secret-file ~/.campaign-sync-hook-secret',
  ).action(async (opts) => done(await (await import('./commands/notify-test.js')).notifyTest(await settings('notifyTest', opts))));

  example(
    program
      .command('simulate')
      .description('run a local simulator of the service until stopped')
      .option('--port <n>', `port to listen on (0 picks a free one)${shownDefault('port')}`)
      .option('--host <host>', `address to listen on${shownDefault('host')}`)
      .option('--seed <seed>', `same seed, same data${shownDefault('seed')}`)
      .option('--campaigns <n>', `number of campaigns (half session, half role)${shownDefault('campaigns')}`)
      .option('--records <n>', `results per campaign at start${shownDefault('records')}`)
      .option('--api-key <key>', `the key clients must send${shownDefault('simulatorApiKey')}`)
      .option('--rate-limit <rate>', `per-key limit, N/DURATION, or 'off'${shownDefault('simulatorRateLimit')}`)
      .option('--growth <rate>', 'new results per campaign, N/DURATION (e.g. 5/1m)')
      .option('--growth-campaigns <n>', 'only the first N campaigns receive --growth (the rest stay as they started)')
      .option(
        '--churn <rate>',
        'changes to served results, N/DURATION: re-scores, late arrivals, deletions (rehearse --lookback and reconcile)',
      )
      .option('--faults <spec>', 'share of faulty replies: 0.2, or by kind (500, 503, 429, reset, slow, truncate): 500=0.05,slow=0.02')
      .option(
        '--malformed <spec>',
        'serve every Nth record of a campaign failing a record rule, N or N:kinds (id, score, campaign, order-index, deep, nul, huge-number, int64; in turn)',
      )
      .option('--malformed-for <duration>', 'with --malformed: serve the records whole again after this long (rehearse quarantine retry)')
      .option(
        '--quirks <list>',
        'shapes the docs and samples show, comma-separated: docs (= bare-array, flat-session, docs-feedback, campaigns-paged, unordered-times), string-order-index, last-record-id, no-cursor-field, campaigns-bare-array, unknown-type',
      )
      .option(
        '--order-index-start <n>',
        'first order_index (e.g. 9007199254740993 to rehearse int64 past 2^53); must leave room in int64 for --records and a year of --growth',
      )
      .option('--tls-cert <file>', 'serve https with this PEM certificate (with --tls-key; rehearse a private CA)')
      .option('--tls-key <file>', "the certificate's PEM private key")
      .option('--json', 'print where it listens (url, port, key) as one JSON line on stdout, and no hints')
      .option('--quiet', 'print only errors'),
    'campaign-sync simulate --port 8080',
    'curl -H "Authorization: Bearer demo-key" "http://127.0.0.1:8080/v1/campaigns"',
    'campaign-sync simulate --growth 5/1m --faults 0.1',
    'campaign-sync simulate --quirks docs',
  ).action(async (opts) => done(await (await import('./commands/simulate.js')).simulate(opts, signal)));

  example(
    outputOptions(
      program
        .command('demo')
        .description('start the simulator in-process and pull everything into ./campaign-sync-demo.db; no key, no network')
        .option('--db <path>', `SQLite database${shownDefault('demoDb')}`)
        .option('--seed <seed>', `simulator seed${shownDefault('seed')}`)
        .option('--campaigns <n>', `simulated campaigns${shownDefault('campaigns')}`)
        .option('--records <n>', `results per campaign${shownDefault('records')}`)
        .option(VERBOSE, VERBOSE_HELP),
    ),
    'campaign-sync demo',
    'campaign-sync demo --db /tmp/try.db --records 2000',
  ).action(async (opts) => {
    // The demo takes no config file: its settings are its flags and the defaults.
    const { resolveSettings } = await import('./config/settings.js');
    done(await (await import('./commands/demo.js')).demo(resolveSettings('demo', opts, {}), signal));
  });

  example(
    program
      .command('completion')
      .description('print a shell completion script (bash, zsh or fish)')
      .argument('<shell>', 'bash, zsh or fish'),
    'source <(campaign-sync completion bash)',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh's ${fpath[1]}, for the user to paste.
    'campaign-sync completion zsh > "${fpath[1]}/_campaign-sync"   # then restart zsh',
    'campaign-sync completion fish > ~/.config/fish/completions/campaign-sync.fish',
  ).action(async (shell: string) => {
    const { completion, SHELLS } = await import('./commands/completion.js');
    const commands = program.commands.map((c) => ({
      name: c.name(),
      description: c.description(),
      args: c.name() === 'completion' ? SHELLS : undefined,
      // An option kept out of --help (watch's --full, --since, --until: refused) is not offered here either.
      options: [
        ...c.options.filter((o) => !o.hidden),
        ...[{ long: '--help', flags: '--help', required: false, optional: false, argChoices: undefined, description: 'show help' }],
      ].map((o) => ({
        flag: o.long as string,
        short: 'short' in o ? o.short : undefined,
        value: o.required || o.optional,
        choices: o.argChoices ?? [],
        // The value's placeholder says what it is: `--db <path>`, `-o, --output <file>`, `--out <dir>`.
        files: /[<[](path|file|dir)[>\]]/.test(o.flags),
        description: o.description,
      })),
    }));
    done(completion(shell, commands, (text) => io.stdout.write(text)));
  });

  return program;
}
