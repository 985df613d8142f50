/**
 * The servers `--notify` tests talk to, on 127.0.0.1:0 and closed after each file: a webhook that
 * records every POST and answers the statuses it is told, and a front server between the CLI and
 * the simulator that fails one campaign's results (404 with a request_id) or leaves it out of the
 * campaign list on demand.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { atFileEnd } from './file-end.js';

const servers: Server[] = [];
atFileEnd(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void | Promise<void>): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => void handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export interface Hook {
  url: string;
  posts: Array<{ path: string; body: Record<string, unknown>; raw: string; type: string | undefined }>;
  /** Statuses to answer, in order; 200 once used up. */
  answers: number[];
}

/** A webhook whose URL carries a token (`?token=s3cret`), which nothing may print. */
export async function webhook(): Promise<Hook> {
  const hook: Hook = { url: '', posts: [], answers: [] };
  hook.url = `${await listen((req, body, res) => {
    hook.posts.push({ path: req.url ?? '', body: JSON.parse(body), raw: body, type: req.headers['content-type'] });
    const status = hook.answers.shift() ?? 200;
    if (status === 302) res.writeHead(302, { location: '/elsewhere' }).end();
    else res.writeHead(status).end();
  })}/hook?token=s3cret`;
  return hook;
}

/** The simulator at `target` behind a front server that can fail one campaign's results or hide it from the list. */
export async function front(target: string) {
  const state = { fail: undefined as string | undefined, hide: undefined as string | undefined, requestId: randomUUID() };
  const url = await listen(async (req, _body, res) => {
    const path = req.url ?? '/';
    const query = new URL(path, 'http://x').searchParams;
    if (state.fail !== undefined && path.includes('/results') && query.get('campaign_id') === state.fail) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Campaign not found', status_code: 404, request_id: state.requestId } }));
      return;
    }
    const upstream = await request(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '' } });
    let text = await upstream.body.text();
    if (state.hide !== undefined && new URL(path, 'http://x').pathname === '/v1/campaigns') {
      const doc = JSON.parse(text) as { data: Array<{ id: string }> };
      doc.data = doc.data.filter((c) => c.id !== state.hide);
      text = JSON.stringify(doc);
    }
    res.writeHead(upstream.statusCode, { 'content-type': 'application/json' }).end(text);
  });
  return { url, state };
}
