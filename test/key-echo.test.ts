/**
 * A service (or something posing as one) that echoes the key it was sent, in an error message, a
 * request id or a body that is not JSON: the key must reach no output, log, mirror file or health
 * document (PRODUCT.md §1). Before, it was printed on stderr, in `status`, and stored in
 * sync_state.last_error six times.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBaseUrl } from '../src/config/config.js';
import { cli, sim, tempDir } from './helpers/index.js';

const KEY = 'sk_live_Echo3dBack+Key/0123456789=';
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** Passes the campaign list through to the simulator; answers every results request with the key echoed back. */
async function echoing(upstream: string, mode: 'json-404' | 'html-200' | 'campaigns-400'): Promise<string> {
  const server = createServer(async (req, res) => {
    const auth = String(req.headers.authorization ?? '');
    const token = auth.replace(/^Bearer /, '');
    if (mode === 'campaigns-400' || (req.url?.startsWith('/v1/campaigns?') === false && req.url !== '/v1/campaigns')) {
      if (mode === 'html-200') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<html>welcome ${token}</html>`);
        return;
      }
      res
        .writeHead(mode === 'campaigns-400' ? 400 : 404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `token ${auth} has no access`, request_id: `req-${encodeURIComponent(token)}` } }));
      return;
    }
    const up = await request(`${upstream}${req.url}`, { headers: { authorization: auth } });
    res.writeHead(up.statusCode, { 'content-type': 'application/json' }).end(await up.body.text());
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function filesHold(dir: string, needle: string): string[] {
  return readdirSync(dir).filter((f) => readFileSync(join(dir, f)).includes(needle));
}

describe('a key echoed back by the service', () => {
  it('in error messages and request ids of results pages: not on stderr, in status, --verbose, --json or the mirror', async () => {
    const s = await sim({ campaigns: 2, records: 5, apiKey: KEY });
    const url = await echoing(s.url, 'json-404');
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: KEY };
    const pull = await cli(['pull', '--db', db, '--verbose', '--max-retries', '0'], { env });
    expect(pull.code).toBe(4);
    expect(pull.stdout + pull.stderr).toContain('token Bearer [the API key] has no access');
    expect(pull.stderr).toContain('request_id req-[the API key]');
    const json = await cli(['pull', '--db', db, '--json', '--verbose', '--max-retries', '0'], { env });
    const status = await cli(['status', '--db', db]);
    const statusJson = await cli(['status', '--db', db, '--json']);
    for (const out of [pull.stdout, pull.stderr, json.stdout, json.stderr, status.stdout, status.stderr, statusJson.stdout]) {
      expect(out).not.toContain(KEY);
      expect(out).not.toContain(encodeURIComponent(KEY));
    }
    expect(statusJson.stdout).toContain('[the API key]');
    expect(filesHold(dir, KEY)).toEqual([]);
    expect(filesHold(dir, encodeURIComponent(KEY))).toEqual([]);
  });

  it('in a body that is not JSON, and in a 400 to the campaign list', async () => {
    const s = await sim({ campaigns: 2, records: 5, apiKey: KEY });
    for (const mode of ['html-200', 'campaigns-400'] as const) {
      const url = await echoing(s.url, mode);
      const dir = tempDir();
      const run = await cli(['pull', '--db', join(dir, 'm.db'), '--max-retries', '0'], {
        env: { CAMPAIGN_SYNC_BASE_URL: url, CAMPAIGN_SYNC_API_KEY: KEY },
      });
      expect(run.code, mode).not.toBe(0);
      expect(run.stdout + run.stderr, mode).toContain('[the API key]');
      expect(run.stderr + run.stdout, mode).not.toContain(KEY);
      expect(run.stderr + run.stdout, mode).not.toContain(encodeURIComponent(KEY));
      expect(filesHold(dir, KEY), mode).toEqual([]);
    }
  });
});

describe('a malformed base URL that carries a password', () => {
  it('is named without its user name and password (flag and environment alike), exit 2', async () => {
    expect(() => resolveBaseUrl('http://bob:Pa55word@127.0.0.1:99999', false)).toThrow(
      '--base-url: "http://…@127.0.0.1:99999" is not a URL (example: https://api.example.com)',
    );
    for (const args of [['--base-url', 'https://bob:Pa55word@api.example.com:99999/x'], []]) {
      const run = await cli(['campaigns', ...args, '--json'], {
        env: { CAMPAIGN_SYNC_API_KEY: KEY, CAMPAIGN_SYNC_BASE_URL: 'http://eve:S3cret@[::1:1' },
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('is not a URL');
      for (const secret of ['Pa55word', 'S3cret', 'bob:', 'eve:']) expect(run.stderr + run.stdout).not.toContain(secret);
    }
  });
});
