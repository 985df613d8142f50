/**
 * What the spinner says: streams done / total as they finish, records, pages, requests,
 * elapsed time, and, while the run waits for the request budget, a 429's pause or a retry's
 * backoff, what it waits for and the seconds left ("waiting for rate limit: 41 s"). A ticker redraws
 * it every second so the countdown moves while no page arrives. Built only when a spinner is shown.
 */
import type { PassProgress, RunEvents } from '../core/events.js';
import type { ProgressLine } from './progress.js';
import { formatCount, plural } from './table.js';

type Waiting = { why: string; until: number };

/** `1m 04s`, `42 s`. */
function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

export class LiveProgress {
  private totals: PassProgress | undefined;
  private pages = 0;
  private requests = 0;
  private waiting: Waiting | undefined;

  constructor(
    private readonly now: () => number,
    private readonly startedAt = now(),
  ) {}

  /** The spinner's text at this moment. */
  text(): string {
    const t = this.totals;
    const parts: string[] = [];
    if (t) parts.push(`${t.streamsDone}/${t.streams} streams`, `${formatCount(t.records)} records`, plural(this.pages, 'page'));
    parts.push(plural(this.requests, 'request'), elapsed(this.now() - this.startedAt));
    const w = this.waiting;
    const left = w ? Math.ceil((w.until - this.now()) / 1000) : 0;
    const line = parts.join(', ');
    return w && left > 0 ? `${line}; ${w.why}: ${left} s` : line;
  }

  /** The listeners that feed it; `redraw` is called after each. */
  events(redraw: () => void): RunEvents {
    return {
      request: () => {
        this.requests++;
        this.waiting = undefined;
        redraw();
      },
      budgetWaitStart: (e) => {
        if (e.ms > 0) this.wait('waiting for rate limit', e.ms);
        redraw();
      },
      retry: (e) => {
        this.wait(e.status === 429 ? 'waiting for rate limit (429)' : `retrying after ${e.status ?? 'an error'}`, e.delayMs);
        redraw();
      },
      page: (e) => {
        this.pages++;
        this.totals = e.progress;
        redraw();
      },
      streamDone: (e) => {
        this.totals = e.progress;
        redraw();
      },
    };
  }

  private wait(why: string, ms: number): void {
    const until = this.now() + ms;
    // Several streams wait at once: show the longest wait.
    if (!this.waiting || this.waiting.until < until) this.waiting = { why, until };
  }
}

/** Listeners that keep `progress` honest, with a 1 s ticker for the countdown; nothing when no spinner is shown. */
export function liveProgress(progress: ProgressLine | undefined, now: () => number = Date.now, tickMs = 1000): RunEvents {
  if (!progress?.active) return {};
  const view = new LiveProgress(now);
  const redraw = () => {
    if (progress.active) progress.update(view.text());
  };
  const timer = setInterval(() => {
    if (progress.active) redraw();
    else clearInterval(timer);
  }, tickMs);
  timer.unref();
  return view.events(redraw);
}
