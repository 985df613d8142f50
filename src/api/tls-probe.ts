/**
 * Does a plain-http base URL point at a port that speaks TLS? Asked only after a request there was
 * closed before any byte of an answer (what Node's own https server does with plain HTTP), so a
 * protocol mismatch is named at once instead of being retried like a flaky network. The answer is a
 * fact, not a guess: a TLS handshake is made with the same host and port, and nothing is sent over
 * it (no request, no key); the certificate is not checked, since only "does it speak TLS" is asked.
 */
import { isIP } from 'node:net';
import { connect } from 'node:tls';

/** True when `origin` (an http: URL) completes a TLS handshake within `timeoutMs`. */
export function speaksTls(origin: URL, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  const host = origin.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(origin.port) || 80;
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    // No servername for an address: Node warns (DEP0123) that SNI takes host names only.
    const socket = connect({ host, port, rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) });
    const end = (speaks: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(speaks);
    };
    const onAbort = () => end(false);
    const timer = setTimeout(onAbort, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('secureConnect', () => end(true));
    socket.on('error', () => end(false));
    socket.once('close', () => end(false));
  });
}
