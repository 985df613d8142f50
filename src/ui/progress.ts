/** A spinner with live counts on stderr, only when Output says people are watching a TTY. */
import type { Output } from './output.js';

export interface ProgressLine {
  /** True while a spinner is shown: callers skip formatting otherwise. */
  readonly active: boolean;
  update(text: string): void;
  stop(): void;
}

/**
 * A spinner counting down to `until` (ms since the epoch, the wall clock: it is only shown), redrawn
 * each second: `next pass in 1m 45s`. Nothing when no spinner is shown.
 */
export async function countdown(out: Output, until: number, say: (left: string) => string): Promise<ProgressLine> {
  const left = () => {
    const s = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    return s < 60 ? `${s} s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  };
  const line = await startProgress(out, say(left()));
  if (!line.active) return line;
  const ticker = setInterval(() => line.update(say(left())), 1000);
  ticker.unref();
  return {
    get active() {
      return line.active;
    },
    update: (t) => line.update(t),
    stop: () => {
      clearInterval(ticker);
      line.stop();
    },
  };
}

export async function startProgress(out: Output, text: string): Promise<ProgressLine> {
  if (!out.interactive) return { active: false, update() {}, stop() {} };
  const { default: ora } = await import('ora');
  const spinner = ora({
    text,
    // Through Output's stream, like every other line for people.
    stream: out.streams.stderr as NodeJS.WriteStream,
    color: out.color ? 'cyan' : undefined,
    // Output.interactive has already decided (TTY, --json, --quiet, CI); ora's own test differs on CI=''.
    isEnabled: true,
    // ora would put stdin in raw mode to swallow keystrokes, and in raw mode the terminal no longer
    // turns Ctrl-C into SIGINT (nor Ctrl-Z, Ctrl-\ into theirs): the pull ran on through every Ctrl-C.
    // Left alone, the terminal delivers Ctrl-C as the very SIGINT that main.ts handles.
    discardStdin: false,
  }).start();
  let active = true;
  return {
    // False once stopped, so a ticker (ui/live-progress.ts) stops redrawing.
    get active() {
      return active;
    },
    update: (t) => {
      if (active) spinner.text = t;
    },
    stop: () => {
      active = false;
      spinner.stop();
    },
  };
}
