/**
 * `campaign-sync simulate` refuses what it cannot serve at start-up with a usage error (exit 2) that
 * names the flag, instead of an "internal error" (exit 1), an OOM kill or a server nobody can reach.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listenFailure, type SimulateOptions, simulate } from '../../../src/commands/simulate.js';
import { exitCodeFor, UsageError } from '../../../src/errors.js';
import { parseFaults } from '../../../src/simulator/faults.js';
import { checkRateLimit, MAX_WINDOW_COUNT, SlidingWindow } from '../../../src/simulator/window.js';
import { selfSigned } from '../../helpers/tls.js';
import { describeWith } from '../../helpers/tools.js';

/** Runs simulate with an already-aborted signal: it stops at once if it started, or throws at start-up. */
async function startUp(opts: SimulateOptions): Promise<unknown> {
  const ac = new AbortController();
  ac.abort();
  try {
    await simulate({ port: '0', quiet: true, ...opts }, ac.signal);
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Expects a one-line usage error (exit 2) matching `pattern`. */
function expectUsage(err: unknown, pattern: RegExp): void {
  expect(err).toBeInstanceOf(UsageError);
  expect(exitCodeFor(err)).toBe(2);
  const message = (err as Error).message;
  expect(message).not.toContain('\n');
  expect(message).toMatch(pattern);
}

describe('--rate-limit is bounded', () => {
  it('refuses a count past the bound, naming it, before allocating anything', () => {
    // Only the check: 3000000000/1m would allocate 24 GB without it.
    expect(() => checkRateLimit({ count: 3_000_000_000, windowMs: 60_000 })).toThrow(UsageError);
    expect(() => checkRateLimit({ count: 3_000_000_000, windowMs: 60_000 })).toThrow(/^--rate-limit: 3000000000\/1m .*1000000/);
    expect(() => checkRateLimit({ count: MAX_WINDOW_COUNT, windowMs: 60_000 })).not.toThrow();
    expect(() => new SlidingWindow(MAX_WINDOW_COUNT + 1, 60_000)).toThrow(UsageError);
  });

  it('simulate refuses 999999999999/1ms and a count just past the bound (16 MB without the check) with exit 2', async () => {
    expectUsage(await startUp({ rateLimit: '999999999999/1ms' }), /^--rate-limit: .*1000000/);
    expectUsage(await startUp({ rateLimit: `${MAX_WINDOW_COUNT * 2}/1m` }), /^--rate-limit: 2000000\/1m /);
    expect(await startUp({ rateLimit: `${MAX_WINDOW_COUNT}/1m` })).toBeUndefined();
  });
});

/** A self-signed certificate and its key, and a second key, made by the openssl CLI. */
function tlsFiles(): { cert: string; key: string; other: string } {
  const { cert, key } = selfSigned();
  const other = join(dirname(cert), 'other-key.pem');
  execFileSync('openssl', ['genrsa', '-out', other, '2048'], { stdio: 'ignore' });
  return { cert, key, other };
}

describeWith('openssl', 'start-up failures name the flag and the file', () => {
  const f = tlsFiles();

  it("a key that is not the certificate's", async () => {
    const err = await startUp({ tlsCert: f.cert, tlsKey: f.other });
    expectUsage(err, /^--tls-key: .*other-key\.pem is not the key of the certificate in --tls-cert .*cert\.pem \(.*key values mismatch\)$/);
  });

  it('a certificate or key that is not PEM, or the two swapped', async () => {
    const empty = join(dirname(f.cert), 'empty.pem');
    writeFileSync(empty, '');
    expectUsage(
      await startUp({ tlsCert: empty, tlsKey: f.key }),
      /^--tls-cert: .*empty\.pem is not a PEM certificate \(.*no start line\)$/,
    );
    expectUsage(await startUp({ tlsCert: f.cert, tlsKey: empty }), /^--tls-key: .*empty\.pem is not a PEM private key/);
    // A device is no file of PEM (read as --api-key-file is: a named pipe there blocked the start).
    expectUsage(await startUp({ tlsCert: '/dev/null', tlsKey: f.key }), /^--tls-cert: \/dev\/null is not a regular file$/);
    expectUsage(await startUp({ tlsCert: f.key, tlsKey: f.cert }), /^--tls-cert: .*key\.pem is not a PEM certificate/);
    // The right pair still serves.
    expect(await startUp({ tlsCert: f.cert, tlsKey: f.key })).toBeUndefined();
  });

  it('a port it may not bind (EACCES, as for a non-root user below 1024) is exit 2 naming --port', () => {
    const eacces = Object.assign(new Error('listen EACCES: permission denied 127.0.0.1:80'), { code: 'EACCES' });
    expectUsage(listenFailure(eacces, '127.0.0.1', 80), /^--port: no permission to listen on 127\.0\.0\.1:80 \(EACCES/);
    expectUsage(
      listenFailure(Object.assign(new Error('in use'), { code: 'EADDRINUSE' }), '127.0.0.1', 8080),
      /^--port: 127\.0\.0\.1:8080 is already in use/,
    );
    const other = new Error('something else');
    expect(listenFailure(other, '127.0.0.1', 80)).toBe(other);
  });
});

describe('values the simulator or its clients cannot use are refused at start-up', () => {
  it('an empty --host (Node would listen on every interface)', async () => {
    expectUsage(await startUp({ host: '' }), /^--host: must not be empty/);
    expectUsage(await startUp({ host: '  ' }), /^--host: must not be empty/);
  });

  it('--faults with an empty, non-decimal or repeated share', async () => {
    expect(() => parseFaults('500=')).toThrow(/^--faults: "" is not a share/);
    expect(() => parseFaults('500=0.5,500=0.6')).toThrow(/^--faults: 500 is given twice$/);
    expect(() => parseFaults('500=0x1')).toThrow(/^--faults: "0x1" is not a share/);
    expect(() => parseFaults('500=0.1=0.2')).toThrow(/kind=share/);
    expect(() => parseFaults('')).toThrow(/^--faults: "" is not a share/);
    expect(parseFaults('500=0.05,503=.05,429=2%,reset=0')).toEqual({ '500': 0.05, '503': 0.05, '429': 0.02, reset: 0 });
    expectUsage(await startUp({ faults: '500=' }), /^--faults: /);
    expectUsage(await startUp({ faults: '' }), /^--faults: /);
  });

  it('an --api-key the client would refuse (a space, non-ASCII, ESC), naming the character and not the key', async () => {
    for (const [key, code] of [
      ['my key', 'U+0020 at position 3'],
      ['clé', 'U+00E9 at position 3'],
      ['k\u001b[31m', 'U+001B at position 2'],
    ] as const) {
      const err = await startUp({ apiKey: key });
      expectUsage(err, new RegExp(`^--api-key: .*\\(${code.replace('+', '\\+')}\\)`));
      expect((err as Error).message).not.toContain(key);
    }
    expect(await startUp({ apiKey: 'A-b_c.9~!' })).toBeUndefined();
  });
});
