/**
 * A yes/no question on the terminal, for what costs the user something if done by mistake. Asked
 * only when a person is there (stdin and stderr are terminals, no --json, --quiet or CI): elsewhere
 * the command asks for an explicit flag instead, so a script never hangs on a prompt.
 */
import { createInterface } from 'node:readline/promises';
import type { Output } from './output.js';

/** True when a question can be asked and answered. */
export function canAsk(out: Output, stdin: NodeJS.ReadStream = process.stdin): boolean {
  return out.interactive && stdin.isTTY === true;
}

/** Asks `question` (y/N); true only for a yes. */
export async function confirm(out: Output, question: string, stdin: NodeJS.ReadStream = process.stdin): Promise<boolean> {
  const rl = createInterface({ input: stdin, output: out.streams.stderr as NodeJS.WritableStream });
  try {
    const answer = await rl.question(`${question} (y/N) `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
