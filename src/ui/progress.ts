/** A spinner with live counts on stderr, only when Output says people are watching a TTY. */
import type { Output } from './output.js';

export interface Progress {
  update(text: string): void;
  stop(): void;
}

export async function startProgress(out: Output, text: string): Promise<Progress> {
  if (!out.interactive) return { update() {}, stop() {} };
  const { default: ora } = await import('ora');
  const spinner = ora({ text, stream: process.stderr, color: out.color ? 'cyan' : undefined }).start();
  return {
    update: (t) => {
      spinner.text = t;
    },
    stop: () => spinner.stop(),
  };
}
