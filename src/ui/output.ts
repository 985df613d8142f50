/**
 * How campaign-sync talks: data on stdout, people on stderr.
 * `--json` prints one document on stdout and nothing else; `--quiet` prints only errors.
 * Every text passes through the escapes of escape.ts here, so no caller can forward a service's ESC
 * sequence to the terminal; only paint()'s own colour codes are written raw.
 */
import { readEnv } from '../config/env.js';
import { currentIo } from '../core/io.js';
import { safeJson, showLines, showText } from './escape.js';
import type { TableStyle } from './table.js';

export interface OutputFlags {
  json?: boolean;
  quiet?: boolean;
  /** The request log on stderr (ui/request-log.ts); it turns the spinner off, so lines never tear. */
  verbose?: boolean;
}

export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  readonly verbose: boolean;
  /** Spinners only on a TTY, and never with --json, --quiet or CI. */
  readonly interactive: boolean;
  readonly color: boolean;
  /** Tables on a terminal are boxed to its width; in a pipe or file they are TSV (ui/table.ts). */
  readonly tableStyle: TableStyle;

  constructor(
    flags: OutputFlags,
    readonly streams: Streams = currentIo(),
    env: NodeJS.ProcessEnv = currentIo().env,
  ) {
    this.json = flags.json === true;
    this.quiet = flags.quiet === true;
    this.verbose = flags.verbose === true;
    const tty = streams.stderr.isTTY === true;
    this.interactive = tty && !this.json && !this.quiet && !this.verbose && readEnv('ci', env) === undefined;
    this.color = tty && readEnv('noColor', env) === undefined;
    this.tableStyle = streams.stdout.isTTY === true ? { tsv: false, width: streams.stdout.columns } : { tsv: true };
  }

  /** Human output on stdout (tables, summaries); silent with --json or --quiet. */
  print(text: string): void {
    if (!this.json && !this.quiet) this.streams.stdout.write(showLines(text.endsWith('\n') ? text : `${text}\n`));
  }

  /**
   * A command's verdict on stdout that --quiet keeps (a failed check's reasons, a Nagios plugin's
   * lines): asked for by running the command; silent only with --json, whose document says it.
   */
  outcome(text: string): void {
    if (!this.json) this.streams.stdout.write(showLines(text.endsWith('\n') ? text : `${text}\n`));
  }

  /** The one JSON document of --json. */
  document(value: unknown): void {
    if (this.json) this.streams.stdout.write(`${safeJson(JSON.stringify(value, bigintReplacer, 2))}\n`);
  }

  /** One compact JSON line on stdout (watch --json: one per pass). */
  jsonLine(value: unknown): void {
    if (this.json) this.streams.stdout.write(`${safeJson(JSON.stringify(value, bigintReplacer))}\n`);
  }

  /** A line for people on stderr (progress, hints); silent with --json or --quiet. One line: a line feed is escaped too. */
  info(text: string): void {
    if (!this.json && !this.quiet) this.streams.stderr.write(`${showText(text)}\n`);
  }

  /**
   * A line of the --verbose log on stderr: text, or one compact JSON object. Printed with --quiet
   * too: asking for the log is explicit.
   */
  trace(line: string | object): void {
    if (!this.verbose) return;
    const text = typeof line === 'string' ? showText(line) : safeJson(JSON.stringify(line, bigintReplacer));
    this.streams.stderr.write(`${text}\n`);
  }

  /** A line for people on stderr that --json keeps (where watch serves metrics); silent only with --quiet. */
  notice(text: string): void {
    if (!this.quiet) this.streams.stderr.write(`${showText(text)}\n`);
  }

  /** A warning on stderr; silent only with --quiet. */
  warn(text: string): void {
    if (!this.quiet) this.streams.stderr.write(`${this.paint('warning:', 33)} ${showText(text)}\n`);
  }

  /** An error line on stderr: always printed. */
  error(text: string): void {
    this.streams.stderr.write(`${this.paint('error:', 31)} ${showText(text)}\n`);
  }

  /** The line a command ends with when it fails as a whole, `campaign-sync: …` as main.ts prints an error's: always printed. */
  fatal(text: string): void {
    this.streams.stderr.write(`campaign-sync: ${showText(text)}\n`);
  }

  paint(text: string, code: number): string {
    return this.color ? `\u001b[${code}m${text}\u001b[39m` : text;
  }
}

/** JSON.stringify replacer that writes bigints (int64 cursors) as exact numbers-as-strings. */
export function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
