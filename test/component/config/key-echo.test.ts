/**
 * A service (or something posing as one) that echoes the key it was sent, in an error message, a
 * request id or a body that is not JSON: the key must reach no output, log, mirror file or health
 * document (PRODUCT.md §1): not on stderr, not in `status`, not in sync_state.last_error.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBaseUrl } from '../../../src/config/config.js';
import { sim, startCli, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

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
    const pull = await runCli(['pull', '--db', db, '--verbose', '--max-retries', '0'], { env });
    expect(pull.code).toBe(4);
    expect(pull.stdout + pull.stderr).toContain('token Bearer [the API key] has no access');
    expect(pull.stderr).toContain('request_id req-[the API key]');
    const json = await runCli(['pull', '--db', db, '--json', '--verbose', '--max-retries', '0'], { env });
    const status = await runCli(['status', '--db', db]);
    const statusJson = await runCli(['status', '--db', db, '--json']);
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
      const run = await runCli(['pull', '--db', join(dir, 'm.db'), '--max-retries', '0'], {
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
      const run = await runCli(['campaigns', ...args, '--json'], {
        env: { CAMPAIGN_SYNC_API_KEY: KEY, CAMPAIGN_SYNC_BASE_URL: 'http://eve:S3cret@[::1:1' },
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('is not a URL');
      for (const secret of ['Pa55word', 'S3cret', 'bob:', 'eve:']) expect(run.stderr + run.stdout).not.toContain(secret);
    }
  });
});

/** The key's runs of 8 characters (as sent and URL-encoded) that `text` holds, letters of any case. */
function runsIn(text: string, key: string): string[] {
  const folded = text.toLowerCase();
  const found = new Set<string>();
  for (const form of [key, encodeURIComponent(key)])
    for (let i = 0; i + 8 <= form.length; i++) {
      const run = form.slice(i, i + 8).toLowerCase();
      if (folded.includes(run)) found.add(run);
    }
  return [...found];
}

/** Every file under `dir`, as text (latin1: every byte kept). */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .map((path) => ({ path, text: readFileSync(path).toString('latin1') }));
}

const id = (n: number) => `aaaaaaaa-0000-4000-8000-00000000000${n}`;

/**
 * A service that sends the key it was sent back everywhere it can: as a record's order_index, a page's
 * last_record_index, a campaign's name, another's type, the campaign list's cursor, an error body's
 * message (JSON-escaped) and request id (upper-cased), a content-encoding, a body that is not JSON
 * (past the first 40 characters), and a campaign's id. One campaign answers well.
 */
async function keyEchoingService(): Promise<{ url: string; holdList: () => () => void }> {
  let held: Promise<void> | undefined;
  const server = createServer(async (req, res) => {
    const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    if (url.pathname === '/v1/campaigns') {
      await held;
      if (url.searchParams.get('starting_after') !== key) {
        return json(200, {
          data: [
            { id: id(1), name: 'order index', type: 'SESSION_COMPLETION' },
            { id: id(2), name: key, type: 'SESSION_COMPLETION' },
            { id: id(3), name: 'typed by the key', type: key },
            { id: id(4), name: key, type: 'QUIZ' },
          ],
          has_more: true,
          last_record_id: key,
        });
      }
      return json(200, {
        data: [
          { id: id(5), name: 'error body', type: 'SESSION_COMPLETION' },
          { id: id(6), name: 'encoding', type: 'SESSION_COMPLETION' },
          { id: id(7), name: 'healthy', type: 'SESSION_COMPLETION' },
          { id: id(8), name: 'not json', type: 'SESSION_COMPLETION' },
          { id: `campaign-${key}`, name: 'id', type: 'SESSION_COMPLETION' },
        ],
        has_more: false,
      });
    }
    const campaign = url.searchParams.get('campaign_id');
    const record = (orderIndex: unknown) => ({ id: `r-${campaign}`, order_index: orderIndex, campaign: { id: campaign } });
    if (campaign === id(1)) return json(200, { data: [record(key)], has_more: false });
    if (campaign === id(2)) return json(200, { data: [record(1)], has_more: true, last_record_index: key });
    if (campaign === id(5)) {
      const escaped = [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(`{"error":{"message":"no access for ${escaped}","request_id":"${key.toUpperCase()}"}}`);
      return;
    }
    if (campaign === id(6)) return json(200, { data: [], has_more: false }, { 'content-encoding': key });
    if (campaign === id(8)) {
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>welcome back, holder of ${key}</body></html>`);
      return;
    }
    return json(200, { data: [record(1)], has_more: false });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    holdList: () => {
      let release = () => {};
      held = new Promise<void>((r) => {
        release = r;
      });
      return () => {
        held = undefined;
        release();
      };
    },
  };
}

/** A 40-character key and a 64-character key, with characters URL encoding changes. */
const KEYS = ['sk_live_Q7vR+xW2/mPz9KeT=bN4hLcY8dJf3Gs1', 'pk+9fT2c/Vw8qLr5Zx1Hn6Yb3Mk7Jd4Ps0Ge/Ua2Ri9Wo5Ct8Xv1Qe3Nm6Lz4K=='];

describe('a key echoed back in every place the service can put it', () => {
  it('the keys are 40 and 64 characters long', () => {
    expect(KEYS.map((k) => k.length)).toEqual([40, 64]);
  });

  for (const key of KEYS) {
    it(`no run of 8 of its ${key.length} characters reaches any output, file or endpoint`, async () => {
      const service = await keyEchoingService();
      const env = { CAMPAIGN_SYNC_BASE_URL: service.url, CAMPAIGN_SYNC_API_KEY: key };
      const dir = tempDir();
      const db = join(dir, 'm.db');
      const outputs: Array<[string, string]> = [];
      const clean = () => {
        for (const [where, text] of outputs) expect(runsIn(text, key), where).toEqual([]);
      };

      const pull = await runCli(['pull', '--db', db, '--verbose', '--max-retries', '0'], { env });
      expect(pull.code).not.toBe(0);
      outputs.push(['pull stdout', pull.stdout], ['pull stderr', pull.stderr]);
      const said = pull.stdout + pull.stderr;
      // Each place was reached, and its text redacted rather than dropped.
      // The quarantined record's reason is shown by `quarantine list` (the pull's warning counts the fields at fault).
      const quarantined = await runCli(['quarantine', 'list', '--db', db]);
      outputs.push(['quarantine list', quarantined.stdout + quarantined.stderr]);
      expect(quarantined.stdout).toContain('order_index: "[the API key]" is not a non-negative int64');
      expect(said).toContain('last_record_index: "[the API key]" is not a non-negative int64');
      expect(said).toContain('has type [the API key], which campaign-sync does not know how to read: skipped');
      expect(said).toContain('campaign [the API key] (aaaaaaaa-0000-4000-8000-000000000004) has type QUIZ');
      expect(said).toContain('no access for [the API key]');
      expect(said).toContain('request_id [the API key]');
      expect(said).toContain('content-encoding "[the API key]"');
      expect(said).toContain('welcome back, holder of [the API key]');
      expect(said).toContain('starting_after=[the API key]');
      expect(said).toContain('a campaign whose id holds the API key: left out');

      const json = await runCli(['pull', '--db', db, '--json', '--verbose', '--max-retries', '0'], { env });
      outputs.push(['pull --json stdout', json.stdout], ['pull --json stderr', json.stderr]);
      const status = await runCli(['status', '--db', db]);
      const statusJson = await runCli(['status', '--db', db, '--json']);
      outputs.push(['status', status.stdout + status.stderr], ['status --json', statusJson.stdout + statusJson.stderr]);
      expect(status.stdout).toContain('skipped: [the API key] (aaaaaaaa-0000-4000-8000-000000000004): campaign type QUIZ');
      expect(status.stdout).toContain('campaign type [the API key] is not supported');
      const errors = (JSON.parse(statusJson.stdout) as { streams: Array<{ last_error: string | null }> }).streams.map((s) => s.last_error);
      // The record whose order_index is the key is quarantined (its stream goes on), not a stream's error.
      expect(errors.filter((e) => e?.includes('[the API key]'))).toHaveLength(4);

      const { Database } = await import('../../../src/store/sqlite/driver.js');
      const mirror = new Database(db);
      const stored = mirror.prepare('SELECT stream, last_error FROM sync_state').all() as Array<{
        stream: string;
        last_error: string | null;
      }>;
      expect(stored.filter((r) => r.last_error?.includes('[the API key]'))).toHaveLength(4);
      const held = mirror.prepare('SELECT raw, reason FROM quarantine').all() as Array<{ raw: string; reason: string }>;
      expect(held.map((r) => r.raw)).toEqual([`{"id":"r-${id(1)}","order_index":"[the API key]","campaign":{"id":"${id(1)}"}}`]);
      outputs.push(['quarantine', held.map((r) => `${r.raw}\n${r.reason}`).join('\n')]);
      outputs.push(['sync_state.last_error', stored.map((r) => r.last_error).join('\n')]);
      for (const f of filesUnder(dir)) outputs.push([f.path, f.text]);

      // NDJSON files, and the checkpoints' database beside them.
      const ndjson = tempDir();
      const nd = await runCli(['pull', '--format', 'ndjson', '--out', join(ndjson, 'out'), '--verbose', '--max-retries', '0'], {
        env,
        cwd: ndjson,
      });
      expect(nd.stderr).toContain('[the API key]');
      expect(filesUnder(ndjson).some((f) => f.text.includes('[the API key]'))).toBe(true);
      outputs.push(['ndjson pull', nd.stdout + nd.stderr]);
      for (const f of filesUnder(ndjson)) outputs.push([f.path, f.text]);
      clean();

      // A stored error from a version that wrote the key: /healthz serves it redacted.
      const first = stored.find((r) => r.last_error !== null) as { stream: string };
      mirror.prepare('UPDATE sync_state SET last_error = ? WHERE stream = ?').run(`older version: ${key.slice(0, 39)}`, first.stream);
      mirror.close();
      const release = service.holdList();
      const watch = startCli(['watch', '--json', '--interval', '1h', '--max-retries', '0', '--metrics-listen', '127.0.0.1:0', '--db', db], {
        env,
      });
      try {
        await watch.waitFor(/metrics on http/, 90_000);
        const url = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(watch.stderr())?.[1];
        const before = await (await fetch(`${url}/healthz`)).text();
        expect(before).toContain('older version: [the API key]');
        outputs.push(['/healthz before the pass', before]);
        release();
        await watch.waitFor(/"pass":1/, 90_000);
        const health = await (await fetch(`${url}/healthz`)).text();
        expect(health).toContain('[the API key]');
        outputs.push(['/healthz', health], ['/metrics', await (await fetch(`${url}/metrics`)).text()]);
      } finally {
        release();
        watch.child.kill('SIGTERM');
        await watch.exited;
      }
      outputs.push(['watch', watch.stdout() + watch.stderr()]);
      for (const f of filesUnder(dir)) outputs.push([f.path, f.text]);
      clean();
    });
  }
});
