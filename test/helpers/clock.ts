import type { Clock } from '../../src/core/clock.js';
import { AbortedError } from '../../src/errors.js';

/**
 * A fake clock for timing tests: sleeps never wait for real. Once every pending task has registered
 * its sleep (next macrotask), time jumps to the earliest wake-up and those sleepers resume.
 */
export function fakeClock(start = 0): Clock & { t: number; sleeps: number[] } {
  const sleepers: Array<{ at: number; resolve: () => void }> = [];
  let scheduled = false;
  const tick = () => {
    scheduled = false;
    if (sleepers.length === 0) return;
    sleepers.sort((a, b) => a.at - b.at);
    const at = (sleepers[0] as { at: number }).at;
    clock.t = Math.max(clock.t, at);
    while (sleepers.length > 0 && (sleepers[0] as { at: number }).at <= clock.t) sleepers.shift()?.resolve();
    schedule();
  };
  const schedule = () => {
    if (!scheduled && sleepers.length > 0) {
      scheduled = true;
      setImmediate(tick);
    }
  };
  const clock = {
    t: start,
    sleeps: [] as number[],
    now: () => clock.t,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(new AbortedError());
        clock.sleeps.push(ms);
        // An abort ends the sleep at once, as the real sleep's does.
        const onAbort = () => {
          const i = sleepers.indexOf(sleeper);
          if (i >= 0) sleepers.splice(i, 1);
          reject(new AbortedError());
        };
        const sleeper = {
          at: clock.t + ms,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        sleepers.push(sleeper);
        schedule();
      }),
  };
  return clock;
}
