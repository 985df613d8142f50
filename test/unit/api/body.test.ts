/**
 * api/body.ts: one exchange through a dispatcher's low-level `dispatch`, driven here by a fake
 * dispatcher that calls the handler in the order a test needs (undici's Pool and MockAgent call it
 * the same way; test/unit/api/client.test.ts and test/unit/api/hostile.test.ts run the client through them).
 */
import { gzipSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { exchange } from '../../../src/api/body.js';
import { redactor } from '../../../src/core/redact.js';
import { ApiError } from '../../../src/errors.js';

interface Handler {
  onConnect(abort: (err: Error) => void): void;
  onHeaders(status: number, raw: Buffer[], resume: () => void, text: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: Buffer[]): void;
  onError(err: Error): void;
}

/** A dispatcher that hands the handler to the test instead of sending anything. */
function fake() {
  const seen: { handler?: Handler; opts?: Dispatcher.DispatchOptions } = {};
  const dispatcher = {
    dispatch(opts: Dispatcher.DispatchOptions, handler: Handler) {
      seen.opts = opts;
      seen.handler = handler;
      return true;
    },
  } as unknown as Dispatcher;
  return { dispatcher, seen };
}

const info = { method: 'GET', path: '/v1/campaigns/role/results' } as const;
const raw = (headers: Record<string, string>) => Object.entries(headers).flatMap(([k, v]) => [Buffer.from(k), Buffer.from(v)]);
const request = (maxBytes = 1024) => ({
  origin: 'http://127.0.0.1:1',
  path: '/v1/x?a=1',
  headers: { accept: 'application/json' },
  maxBytes,
  redact: redactor('test-key-never-sent'),
});

describe('one exchange through dispatch', () => {
  it('sends a GET to the origin and path, joins the chunks into one body (a character split between two chunks included)', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    expect(seen.opts).toMatchObject({ origin: 'http://127.0.0.1:1', path: '/v1/x?a=1', method: 'GET' });
    const h = seen.handler as Handler;
    const text = Buffer.from('{"name":"é"}');
    const cut = text.indexOf(0xc3) + 1;
    h.onConnect(() => {});
    // A 1xx is not the answer.
    expect(h.onHeaders(103, raw({ link: '</x>' }), () => {}, 'Early Hints')).toBe(true);
    h.onHeaders(200, raw({ 'content-type': 'application/json', 'retry-after': '3' }), () => {}, 'OK');
    h.onData(text.subarray(0, cut));
    h.onData(text.subarray(cut));
    h.onComplete([]);
    const answer = await pending.answer;
    expect(answer).toMatchObject({ status: 200, wireBytes: text.length });
    expect(answer.body.toString('utf8')).toBe('{"name":"é"}');
    expect(answer.headers['retry-after']).toBe('3');
  });

  it('a cancel before the connection ends the exchange when undici hands over its abort, with the cancel reason', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    const reason = new Error('timed out');
    pending.cancel(reason);
    const aborted: Error[] = [];
    const h = seen.handler as Handler;
    h.onConnect((err) => {
      aborted.push(err);
      h.onError(err);
    });
    expect(aborted).toEqual([reason]);
    await expect(pending.answer).rejects.toBe(reason);
  });

  it('a cancel settles at once even when undici never connects (a proxy silent on CONNECT, a SYN never answered)', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    const reason = new Error('timed out');
    pending.cancel(reason);
    // No onConnect yet, and maybe never: the caller must not wait for one.
    const settled = await Promise.race([
      pending.answer.then(
        () => 'answered',
        (err) => err,
      ),
      new Promise((r) => setTimeout(() => r('still waiting'), 200)),
    ]);
    expect(settled).toBe(reason);
    // Should the connection come later after all, the request is aborted before anything is sent.
    const aborted: Error[] = [];
    (seen.handler as Handler).onConnect((err) => aborted.push(err));
    expect(aborted).toEqual([reason]);
  });

  it('a cancel while the body arrives aborts after the callback, never from inside it, and keeps nothing after it', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    const h = seen.handler as Handler;
    const aborted: Error[] = [];
    h.onConnect((err) => aborted.push(err));
    h.onHeaders(200, raw({ 'content-type': 'application/json' }), () => {}, 'OK');
    h.onData(Buffer.from('{"a":'));
    const reason = new Error('aborted');
    pending.cancel(reason);
    expect(aborted).toEqual([]);
    h.onData(Buffer.from('1}'));
    await Promise.resolve();
    expect(aborted).toEqual([reason]);
    h.onError(new Error('socket closed'));
    await expect(pending.answer).rejects.toBe(reason);
  });

  it('an unknown coding, a declared length over the cap and a body over the cap are ApiErrors (invalid), whatever undici reports after', async () => {
    const cases: Array<[Record<string, string>, Buffer, RegExp]> = [
      [{ 'content-encoding': 'br' }, Buffer.from('x'), /content-encoding "br", which campaign-sync cannot decode/],
      [{ 'content-length': '5000' }, Buffer.from('x'), /response body of 5000 bytes is over the 1024-byte cap/],
      [{}, Buffer.alloc(2000, 0x20), /200: response body is over the 1024-byte cap/],
      [{ 'content-encoding': 'gzip' }, Buffer.alloc(2000, 1), /response body \(compressed\) is over the 1024-byte cap/],
      [{ 'content-encoding': 'gzip' }, gzipSync(Buffer.alloc(100_000)), /response body \(inflated\) is over the 1024-byte cap/],
      [{ 'content-encoding': 'gzip' }, Buffer.from('not gzip'), /200: gzip body cannot be inflated/],
    ];
    for (const [headers, body, message] of cases) {
      const { dispatcher, seen } = fake();
      const pending = exchange(dispatcher, request(), info);
      const h = seen.handler as Handler;
      h.onConnect((err) => queueMicrotask(() => h.onError(err)));
      h.onHeaders(200, raw(headers), () => {}, 'OK');
      h.onData(body);
      h.onComplete([]);
      const err = await pending.answer.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toMatch(message);
      expect((err as ApiError).kind).toBe('invalid');
    }
  });

  it('inflates a gzip body within the cap and counts the bytes of the wire', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    const zipped = gzipSync('{"data":[]}');
    const h = seen.handler as Handler;
    h.onConnect(() => {});
    h.onHeaders(200, raw({ 'content-encoding': 'gzip' }), () => {}, 'OK');
    h.onData(zipped);
    h.onComplete([]);
    const answer = await pending.answer;
    expect(answer).toMatchObject({ wireBytes: zipped.length });
    expect(answer.body.toString('utf8')).toBe('{"data":[]}');
  });

  it('an error undici reports (a reset, a refused connection) is thrown as it came', async () => {
    const { dispatcher, seen } = fake();
    const pending = exchange(dispatcher, request(), info);
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    (seen.handler as Handler).onError(reset);
    await expect(pending.answer).rejects.toBe(reset);
  });
});
