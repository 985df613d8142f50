/**
 * A loopback relay in front of a simulator that answers chosen requests itself (a 500 by default)
 * and passes every other one through: a page that fails at a known point of a stream, in-process.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { atFileEnd } from '../helpers/file-end.js';

const open = new Set<() => Promise<void>>();
atFileEnd(async () => {
  for (const close of open) await close();
  open.clear();
});

/** A relay to `s` that fails each request for which `fails(url)` is true; its base URL. */
export async function failingRelay(s: RunningSimulator, fails: (url: URL) => boolean): Promise<{ url: string; failed: URL[] }> {
  const failed: URL[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', s.url);
    if (fails(url)) {
      failed.push(url);
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'internal_error', message: 'relay: failed on purpose', request_id: 'relay-1' } }));
      return;
    }
    const headers: Record<string, string> = {};
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    request(url, { headers })
      .then(async (up) => {
        const body = await up.body.text();
        res.writeHead(up.statusCode, { 'content-type': 'application/json' });
        res.end(body);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  open.add(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, failed };
}
