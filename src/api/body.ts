/**
 * Reads a response body whole, within a cap on its size, inflating a gzip body as it streams in:
 * the cap applies to the inflated size, so a small body that inflates to gigabytes (a gzip bomb) is
 * an error after `maxBytes`, not an out-of-memory. `wireBytes` is what the network carried.
 */
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { ApiError, type RequestInfo } from '../errors.js';

export interface Body {
  text: string;
  /** Bytes received (compressed, when the body was). */
  wireBytes: number;
}

/** The codings we ask for and undo; identity needs nothing. */
function coding(res: Dispatcher.ResponseData, info: RequestInfo): 'identity' | 'gzip' {
  const raw = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (raw === '' || raw === 'identity') return 'identity';
  if (raw === 'gzip' || raw === 'x-gzip') return 'gzip';
  const shown = JSON.stringify(raw.slice(0, 40));
  throw new ApiError(
    info,
    `${res.statusCode}: response body has content-encoding ${shown}, which campaign-sync cannot decode (it asks for gzip only)`,
    {
      invalid: true,
    },
  );
}

/**
 * The whole body as text. Errors: ApiError (invalid) over the cap, for an unknown coding or a corrupt
 * gzip stream; anything else (a reset, a truncated body) is thrown as undici or zlib threw it.
 */
export async function readBody(res: Dispatcher.ResponseData, info: RequestInfo, maxBytes: number): Promise<Body> {
  const status = res.statusCode;
  const overCap = (what = '') => new ApiError(info, `${status}: response body${what} is over the ${maxBytes}-byte cap`, { invalid: true });
  const encoding = coding(res, info);
  const declared = Number(res.headers['content-length']);
  if (declared > maxBytes) throw overCap(` of ${declared} bytes`);
  if (encoding === 'identity' && declared >= 0) {
    // undici fails a body that does not match its Content-Length, so the cap holds as declared.
    return { text: await res.body.text(), wireBytes: declared };
  }
  let wireBytes = 0;
  let total = 0;
  const chunks: Buffer[] = [];
  const keep = (chunk: Buffer) => {
    total += chunk.length;
    if (total > maxBytes) throw overCap(encoding === 'gzip' ? ' (inflated)' : '');
    chunks.push(chunk);
  };
  if (encoding === 'identity') {
    for await (const chunk of res.body) {
      wireBytes += (chunk as Buffer).length;
      keep(chunk as Buffer);
    }
  } else {
    try {
      await pipeline(
        res.body,
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            wireBytes += chunk.length;
            yield chunk;
          }
        },
        createGunzip(),
        async (inflated: AsyncIterable<Buffer>) => {
          for await (const chunk of inflated) keep(chunk);
        },
      );
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('Z_') || code === 'ERR_ZLIB_INITIALIZATION_FAILED') {
        throw new ApiError(info, `${status}: gzip body cannot be inflated (${(err as Error).message})`, { invalid: true });
      }
      throw err;
    }
  }
  return { text: Buffer.concat(chunks, total).toString('utf8'), wireBytes };
}
