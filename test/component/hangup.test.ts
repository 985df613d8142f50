/** After SIGHUP the terminal is gone: stdout's EIO then is the hangup, not a failed disk (exit 74). */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { watchStdout } from '../../src/main.js';

function eio(): NodeJS.ErrnoException {
  return Object.assign(new Error('write EIO'), { code: 'EIO' });
}

describe('stdout after a hangup', () => {
  it("EIO on stdout after SIGHUP keeps the command's exit code; without a hangup it is still 74", () => {
    const hungUp = new PassThrough() as unknown as NodeJS.WriteStream;
    const controller = new AbortController();
    const afterHangup = watchStdout(hungUp, controller, () => true);
    hungUp.emit('error', eio());
    expect(controller.signal.aborted).toBe(true);
    expect(afterHangup.code(0)).toBe(0);

    const failing = new PassThrough() as unknown as NodeJS.WriteStream;
    const plain = watchStdout(failing, new AbortController(), () => false);
    failing.emit('error', eio());
    expect(plain.code(0)).toBe(74);
  });
});
