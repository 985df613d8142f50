/**
 * HTTP servers on 127.0.0.1:0 for tests that need what the simulator does not serve: a front server
 * that passes requests to a simulator but fails one campaign's results with a chosen status and
 * error body, and a webhook that records what it is sent, its raw bytes included. Both are closed
 * at the end of the test file.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { atFileEnd } from './file-end.js';

const servers: Server[] = [];
atFileEnd(() =>
  Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise((r) => {
          s.close(r);
          // A hanging webhook's request would hold close() for ever.
          s.closeAllConnections();
        }),
    ),
  ),
);

/** Starts a server whose handler gets each request with its whole body; resolves with its base URL. */
export async function listen(handler: (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | Promise<void>): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => void handler(req, Buffer.concat(chunks), res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What a front server fails: one campaign's results, with this status and the service's error body. */
export interface Failure {
  campaignId: string;
  status: number;
  message: string;
  requestId: string;
  /** Extra answer headers (Retry-After). */
  headers?: Record<string, string>;
}

/** What a front server changes: one campaign's results failed, campaigns added to the list. */
export interface FrontState {
  fail: Failure | undefined;
  /** Campaigns appended to the campaign list (the simulator serves no results for them). */
  extraCampaigns: Array<Record<string, unknown>>;
}

/** A front server before `target` (a simulator's URL); set `state.fail` to fail a campaign's results. */
export async function front(target: string): Promise<{ url: string; state: FrontState }> {
  const state: FrontState = { fail: undefined, extraCampaigns: [] };
  const url = await listen(async (req, _body, res) => {
    const path = req.url ?? '/';
    const fail = state.fail;
    if (fail !== undefined && path.includes('/results') && new URL(path, 'http://x').searchParams.get('campaign_id') === fail.campaignId) {
      res.writeHead(fail.status, { 'content-type': 'application/json', ...fail.headers });
      res.end(JSON.stringify({ error: { message: fail.message, status_code: fail.status, request_id: fail.requestId } }));
      return;
    }
    const upstream = await request(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '' } });
    let text = await upstream.body.text();
    if (state.extraCampaigns.length > 0 && new URL(path, 'http://x').pathname === '/v1/campaigns' && upstream.statusCode === 200) {
      const list = JSON.parse(text) as { data: unknown[] };
      list.data.push(...state.extraCampaigns);
      text = JSON.stringify(list);
    }
    const retryAfter = upstream.headers['retry-after'];
    res.writeHead(upstream.statusCode, {
      'content-type': 'application/json',
      ...(retryAfter ? { 'retry-after': String(retryAfter) } : {}),
    });
    res.end(text);
  });
  return { url, state };
}

/** One POST a webhook received. */
export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  /** The body's bytes exactly as they arrived (a signature is over these). */
  raw: Buffer;
  body: Record<string, unknown>;
}

/** A webhook answering `answer` (200 by default); `hang` leaves each request unanswered. */
export async function webhook(
  answer: number | 'hang' = 200,
): Promise<{ url: string; posts: Received[]; arrived: () => Promise<Received> }> {
  const posts: Received[] = [];
  const waiting: Array<(r: Received) => void> = [];
  const url = await listen((req, raw, res) => {
    const received = { path: req.url ?? '', headers: req.headers, raw, body: JSON.parse(raw.toString('utf8')) };
    posts.push(received);
    for (const w of waiting.splice(0)) w(received);
    if (answer === 'hang') return;
    res.writeHead(answer).end();
  });
  /** Resolves with the next POST to arrive (or the latest one, if one already has). */
  const arrived = () => new Promise<Received>((resolve) => (posts.length > 0 ? resolve(posts.at(-1) as Received) : waiting.push(resolve)));
  return { url: `${url}/hook`, posts, arrived };
}
