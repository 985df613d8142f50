/**
 * A loopback relay in front of a simulator that answers chosen requests itself (a 500 by default)
 * and passes every other one through: a page that fails at a known point of a stream, in-process;
 * or one that rewrites each results page's text on the way (records the simulator has no kind for).
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

/** What a relay does to the requests it passes: fail some, rewrite the results pages' text. */
interface RelayRules {
  fails?: (url: URL) => boolean;
  rewrite?: (text: string) => string;
}

/** A relay to `s` by `rules`; its base URL, and the requests it failed. */
async function relay(s: RunningSimulator, rules: RelayRules): Promise<{ url: string; failed: URL[] }> {
  const failed: URL[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', s.url);
    if (rules.fails?.(url)) {
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
        const rewrite = up.statusCode === 200 && url.pathname.endsWith('/results') ? rules.rewrite : undefined;
        res.writeHead(up.statusCode, { 'content-type': 'application/json' });
        res.end(rewrite === undefined ? body : rewrite(body));
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

/** A relay to `s` that fails each request for which `fails(url)` is true; its base URL. */
export function failingRelay(s: RunningSimulator, fails: (url: URL) => boolean): Promise<{ url: string; failed: URL[] }> {
  return relay(s, { fails });
}

/** A relay to `s` that passes every request through, each results page's text rewritten by `rewrite` first; its base URL. */
export async function rewritingRelay(s: RunningSimulator, rewrite: (text: string) => string): Promise<string> {
  return (await relay(s, { rewrite })).url;
}
