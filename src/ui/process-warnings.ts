/**
 * Node's process warnings in the CLI's own format. Node's printer writes `(node:1234) Warning: …`
 * over as many lines as the text has (pg's SECURITY WARNING for sslmode=require takes nine), plus a
 * `--trace-warnings` hint, between the one-line messages scripts and cron mail read. The launcher
 * (bin/campaign-sync.js) removes that printer before anything can warn and keeps what arrives until
 * main() calls `takeOverWarnings`; from then on each distinct warning is one line on stderr,
 * `warning: [DEP0123] DeprecationWarning: …`, silent with --quiet (like every warning),
 * and with CAMPAIGN_SYNC_DEBUG (or node --trace-warnings) followed by where it was emitted. Where Node's printer was off
 * (--no-warnings, NODE_NO_WARNINGS=1) they stay off.
 */
import { showLines, showText } from './escape.js';

/** What the launcher kept (see bin/campaign-sync.js). */
interface EarlyWarnings {
  list: Error[];
  /** Whether Node's printer was there: false under --no-warnings or NODE_NO_WARNINGS=1. */
  enabled: boolean;
  stop(): void;
}

/** `[DEP0123] DeprecationWarning: text detail`, whitespace (line feeds too) collapsed to one space. */
export function warningText(warning: Error): string {
  const { code, detail } = warning as Error & { code?: unknown; detail?: unknown };
  const text = [warning.message, typeof detail === 'string' ? detail : ''].join(' ').replace(/\s+/g, ' ').trim();
  const type = warning.name === 'Warning' ? '' : `${warning.name}: `;
  return `${typeof code === 'string' ? `[${code}] ` : ''}${type}${text}`;
}

/**
 * Prints process warnings as single lines from now on, those kept by the launcher first, and returns
 * how to print a warning line of our own the same way. Without the launcher (tests calling run())
 * Node's printer stays.
 */
export function takeOverWarnings(
  opts: { quiet: boolean; debug: boolean },
  write: (text: string) => void = (text) => process.stderr.write(text),
): (text: string) => void {
  const seen = new Set<string>();
  const say = (text: string, stack?: string) => {
    const line = `warning: ${showText(text)}`;
    if (opts.quiet || seen.has(line)) return;
    seen.add(line);
    write(`${line}\n`);
    if (stack !== undefined) write(`${showLines(stack)}\n`);
  };
  const early = (globalThis as Record<symbol, EarlyWarnings | undefined>)[Symbol.for('campaign-sync.early-warnings')];
  if (early === undefined) return say;
  early.stop();
  if (!early.enabled) return say;
  // Where it was emitted, as node --trace-warnings shows it; CAMPAIGN_SYNC_DEBUG asks for it too.
  const trace = opts.debug || (process as { traceProcessWarnings?: boolean }).traceProcessWarnings === true;
  const print = (warning: Error) => say(warningText(warning), trace ? warning.stack : undefined);
  process.on('warning', print);
  for (const warning of early.list.splice(0)) print(warning);
  return say;
}
