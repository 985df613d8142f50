/**
 * The simulator's gzip: whether a request accepts it, and a page body compressed, kept with the
 * cached page when pages are cached (benchmarks measure the client, not gzip in the server).
 */
import { gzipSync } from 'node:zlib';

/** True when an Accept-Encoding header accepts gzip (`gzip`, `x-gzip` or `*`, without q=0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) return false;
    return coding === 'gzip' || coding === 'x-gzip' || coding === '*';
  });
}

/** gzip of `body`; with `cache`, the same string's Buffer is reused (a Map keyed by the cached string). */
export function gzipBody(body: string, cache: Map<string, Buffer> | undefined): Buffer {
  let zipped = cache?.get(body);
  if (zipped === undefined) {
    zipped = gzipSync(body);
    cache?.set(body, zipped);
  }
  return zipped;
}
