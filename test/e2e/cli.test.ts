import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../../src/ui/shell.js';
import { BIN, cli, sim, startCli, tempDir } from '../helpers/index.js';
import { needs } from '../helpers/tools.js';

const COMMANDS = ['campaigns', 'pull', 'watch', 'status', 'export', 'reset', 'simulate', 'demo'];

function keyFile(dir: string, key: string): string {
  const p = join(dir, 'key');
  writeFileSync(p, `${key}\n`, { mode: 0o600 });
  return p;
}

describe('cli: help and usage', () => {
  it('watch --help offers no --full, --since or --until (watch refuses them); pull --help does', async () => {
    const watch = await cli(['watch', '--help']);
    expect(watch.code).toBe(0);
    expect(watch.stdout).not.toMatch(/--full|--since|--until/);
    const pull = await cli(['pull', '--help']);
    for (const flag of ['--full', '--since <date>', '--until <date>']) expect(pull.stdout).toContain(flag);
    const refused = await cli(['watch', '--full', '--db', join(tempDir(), 'm.db'), '--base-url', 'http://127.0.0.1:9'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/watch --full would re-read everything on every pass/);
  });

  it('every command has --help with a purpose and an example', async () => {
    const v = await cli(['--version']);
    expect(v.stdout.trim()).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const c of COMMANDS) expect(top.stdout).toContain(c);
    for (const c of COMMANDS) {
      const r = await cli([c, '--help']);
      expect(r.code, c).toBe(0);
      expect(r.stdout, c).toMatch(/Examples:\n {2}\$ campaign-sync|Examples:\n {2}\$ curl/);
      expect(r.stdout.split('\n')[2]?.trim().length, c).toBeGreaterThan(10);
    }
    // `help <command>` too; a typo gets the one line a mistyped command gets, not the whole help.
    const viaHelp = await cli(['help', 'forget']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toMatch(/^Usage: campaign-sync forget /);
    const typo = await cli(['help', 'forgt']);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toBe("campaign-sync: unknown command 'forgt' (Did you mean forget?) (add --help for usage)\n");
  });

  it('bad flags exit 2 with one clear line', async () => {
    for (const args of [
      ['pull', '--bogus'],
      ['pull', '--page-size', '500', '--base-url', 'http://127.0.0.1:1'],
      ['pull', '--since', '2026-02-30', '--base-url', 'http://127.0.0.1:1'],
      ['export', '--table', 'nope'],
      ['frobnicate'],
    ]) {
      const r = await cli(args, { env: { CAMPAIGN_SYNC_API_KEY: 'k' } });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/error|campaign-sync:/);
    }
  });

  it('pull with no key or base URL says exactly what to set', async () => {
    const r = await cli(['pull'], { cwd: tempDir() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'campaign-sync: missing --base-url or CAMPAIGN_SYNC_BASE_URL and --api-key-file or CAMPAIGN_SYNC_API_KEY (try `campaign-sync demo` to run without a key)',
    );
  });

  it('refuses plain http to a non-loopback host (exit 2) without sending anything', async () => {
    const r = await cli(['pull', '--base-url', 'http://api.example.com'], { env: { CAMPAIGN_SYNC_API_KEY: 'k' }, cwd: tempDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--allow-insecure-http/);
  });
});

describe('cli: against the simulator', () => {
  it('pull, then status and export, with --json documents', async () => {
    const s = await sim({ campaigns: 3, records: 40 });
    const dir = tempDir();
    const db = join(dir, 'm.db');
    const env = { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey };
    const pull = await cli(['pull', '--db', db, '--json'], { env });
    expect(pull.code).toBe(0);
    const doc = JSON.parse(pull.stdout);
    expect(doc.records).toBe(120);
    expect(doc.streams[0]).toMatchObject({ endpoint: expect.any(String), records: 40, pages: 1, status: 'ok', error: null });
    expect(Object.keys(doc.streams[0])).toEqual(
      expect.arrayContaining(['campaign_id', 'endpoint', 'report_type', 'records', 'pages', 'cursor', 'status', 'error']),
    );
    expect(Object.keys(doc)).toEqual(expect.arrayContaining(['streams', 'requests', 'records', 'duration_ms']));
    expect(pull.stderr).toBe('');

    const human = await cli(['pull', '--db', db], { env });
    expect(human.code).toBe(0);
    // Not a terminal: the table is TSV with a header row.
    expect(human.stdout).toMatch(/^campaign\ttype\tnew\tupdated\tpages\trequests\ttime\tquarantined\tstatus$/m);
    expect(human.stdout).toMatch(/0 records \(0 new, 0 updated\), 3 streams, 4 requests/);

    const status = await cli(['status', '--db', db, '--json']);
    expect(status.code).toBe(0);
    const st = JSON.parse(status.stdout);
    expect(st.streams.length).toBe(3);
    expect(st.streams[0]).toMatchObject({ records: 40, last_error: null });
    expect(st.streams[0].cursor).toMatch(/^\d+$/);

    const quiet = await cli(['pull', '--db', db, '--quiet'], { env });
    expect(quiet.stdout + quiet.stderr).toBe('');

    const campaigns = await cli(['campaigns', '--db', db, '--json'], { env });
    expect(JSON.parse(campaigns.stdout).data.length).toBe(3);

    const unknown = await cli(['reset', '--db', db, '--campaign', 'no-such-campaign']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no stream of a campaign with the id, name or id prefix "no-such-campaign"/);
    const first = JSON.parse(campaigns.stdout).data[0];
    const byName = await cli(['reset', '--db', db, '--campaign', first.name, '--json']);
    expect(JSON.parse(byName.stdout).reset).toBe(1);
    // Named twice, by its name and its id: one campaign, listed once (it was listed twice).
    const twice = await cli(['reset', '--db', db, '--campaign', first.name, '--campaign', first.id, '--json']);
    expect(JSON.parse(twice.stdout).campaigns).toEqual([first.id]);
    const reset = await cli(['reset', '--all', '--db', db]);
    expect(reset.code).toBe(0);
    expect(reset.stdout).toMatch(/Forgot 2 checkpoints/);
    const after = JSON.parse((await cli(['status', '--db', db, '--json'])).stdout);
    expect(after.streams.every((x: { cursor: unknown }) => x.cursor === null)).toBe(true);
  });

  it('a wrong key exits 3, and the key appears nowhere', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const dir = tempDir();
    const secret = 'sk-very-secret-0123456789';
    const r = await cli(['pull', '--db', join(dir, 'm.db'), '--api-key-file', keyFile(dir, secret), '--base-url', s.url]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/401 Unauthorized/);
    expect(r.stdout + r.stderr).not.toContain(secret);
    for (const f of readdirSync(dir)) if (f !== 'key') expect(readFileSync(join(dir, f)).includes(secret), f).toBe(false);
  });

  it('a dead server exits 5 and says which request failed', async () => {
    const s = await sim();
    const url = s.url;
    await s.close();
    const r = await cli(['pull', '--db', join(tempDir(), 'm.db'), '--max-retries', '1', '--base-url', url], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/nothing synced: ECONNREFUSED: .* — GET \/v1\/campaigns/);
  });

  it('demo needs no key and no network, and leaves a private database', async () => {
    const dir = tempDir();
    const r = await cli(['demo', '--records', '30'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/180 records \(180 new, 0 updated\), 6 streams/);
    expect(r.stdout).toMatch(/Try next:/);
    expect((statSync(join(dir, 'campaign-sync-demo.db')).mode & 0o777).toString(8)).toBe('600');
  });

  it('demo runs again on its own database, but refuses a real mirror (and PostgreSQL) rather than mixing made-up records in', async () => {
    const dir = tempDir();
    const again = async () => cli(['demo', '--records', '5', '--json'], { cwd: dir });
    expect((await again()).code).toBe(0);
    const second = await again();
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout).records).toBe(0);

    // A mirror of a "real" service: another simulator's campaigns.
    const s = await sim({ campaigns: 2, records: 5, seed: 'real-service' });
    const real = join(dir, 'real.db');
    const pulled = await cli(['pull', '--db', real], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(pulled.code).toBe(0);
    const before = JSON.parse((await cli(['status', '--db', real, '--json'])).stdout);
    const refused = await cli(['demo', '--db', real], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `campaign-sync: --db ${real} holds 2 campaigns this demo does not serve (a mirror of the real service, or a demo with another --seed or --campaigns); the demo writes made-up records: give it another --db (default ./campaign-sync-demo.db)\n`,
    );
    expect(JSON.parse((await cli(['status', '--db', real, '--json'])).stdout)).toEqual(before);

    const pg = await cli(['demo', '--db', 'postgres://127.0.0.1:9/x'], { cwd: dir });
    expect(pg.code).toBe(2);
    expect(pg.stderr).toMatch(/never into a PostgreSQL mirror/);
  });

  it("demo's Try next hints paste as they are: a --db with spaces, quotes, $(…) or terminal escapes is shell-quoted", async (ctx) => {
    needs(ctx, 'dash', 'zsh', 'sqlite3');
    const dir = tempDir();
    const shells = { plain: ['dash', 'zsh'], escaped: ['bash', 'zsh'] };
    for (const [db, quoted, kind] of [
      ['campaign-sync-demo.db', 'campaign-sync-demo.db', 'plain'],
      ['team mirror.db', "'team mirror.db'", 'plain'],
      ["my demo's $(touch pwned).db", "'my demo'\\''s $(touch pwned).db'", 'plain'],
      ['esc\u001b]0;title\u0007.db', "$'esc\\x1b]0;title\\x07.db'", 'escaped'],
      // sqlite3 took `-x.db` for an option.
      ['-x.db', './-x.db', 'plain'],
    ] as const) {
      const r = await cli(['demo', '--db', db, '--campaigns', '2', '--records', '5'], { cwd: dir });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
      // The launcher by its path (no npx, which would look the name up in the registry): pasted into
      // a shell as printed, each hint names the same file and runs nothing else.
      const me = shellWord(BIN);
      const hints = r.stdout.split('\n').filter((l) => l.startsWith(`  ${me} `) || l.startsWith('  sqlite3 '));
      expect(hints).toContain(`  ${me} status --db ${quoted}`);
      expect(r.stdout).not.toContain('npx');
      const status = hints.find((l) => l.includes(' status ')) as string;
      const sqlite = hints.find((l) => l.startsWith('  sqlite3 ')) as string;
      for (const shell of shells[kind]) {
        const env = { ...process.env, CAMPAIGN_SYNC_DB: undefined, XDG_STATE_HOME: tempDir() };
        const s = spawnSync(shell, ['-c', `${status} --json`], { cwd: dir, env, encoding: 'utf8' });
        expect(s.status, `${shell}: ${s.stderr}`).toBe(0);
        expect(JSON.parse(s.stdout).streams.length).toBe(2);
        const q = spawnSync(shell, ['-c', sqlite], { cwd: dir, encoding: 'utf8' });
        expect(q.status, `${shell}: ${q.stderr}`).toBe(0);
        expect(q.stdout).toMatch(/^\w+\|\d+\|/);
      }
      expect(existsSync(join(dir, 'pwned'))).toBe(false);
    }
  });

  it("simulate's hints paste into zsh on IPv6 loopback: the URL's brackets are quoted, not a glob", async (ctx) => {
    needs(ctx, 'zsh');
    const run = startCli(['simulate', '--port', '0', '--host', '::1', '--campaigns', '2', '--records', '3']);
    try {
      await run.waitFor(/stop with Ctrl-C/);
      const lines = run.stderr().split('\n');
      const curl = (lines.find((l) => l.startsWith('try: ')) as string).slice('try: '.length);
      expect(curl).toMatch(/^curl -H "Authorization: Bearer demo-key" 'http:\/\/\[::1\]:\d+\/v1\/campaigns'$/);
      const pull = (lines.find((l) => l.startsWith('or:  ')) as string).slice('or:  '.length);
      const c = spawnSync('zsh', ['-c', `${curl} -s --noproxy '*'`], { encoding: 'utf8' });
      expect(c.status, c.stderr).toBe(0);
      expect(JSON.parse(c.stdout).data.length).toBe(2);
      const env = { ...process.env, CAMPAIGN_SYNC_DB: undefined, CAMPAIGN_SYNC_BASE_URL: undefined, XDG_STATE_HOME: tempDir() };
      const db = join(tempDir(), 'm.db');
      // The launcher by its path from where it was started (the repository), run as printed.
      expect(pull).toMatch(/^CAMPAIGN_SYNC_API_KEY=demo-key \.\/bin\/campaign-sync\.js pull /);
      const p = spawnSync('zsh', ['-c', `${pull} --db ${db} --json`], {
        encoding: 'utf8',
        env,
      });
      expect(p.status, p.stderr).toBe(0);
      expect(JSON.parse(p.stdout).records).toBe(6);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });

  it('demo takes an empty file as a new database, as pull does (a newcomer has no key for pull); other files stay refused', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'campaign-sync-demo.db'), '', { mode: 0o600 });
    const r = await cli(['demo', '--records', '5', '--json'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).records).toBe(30);
    const status = await cli(['status', '--db', join(dir, 'campaign-sync-demo.db'), '--json']);
    expect(JSON.parse(status.stdout).streams.length).toBe(6);

    writeFileSync(join(dir, 'one-byte.db'), '\n');
    const refused = await cli(['demo', '--db', 'one-byte.db'], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/one-byte\.db is not a campaign-sync database/);
    expect(readFileSync(join(dir, 'one-byte.db'), 'utf8')).toBe('\n');
  });
});

describe('cli: campaigns of an unknown type', () => {
  it('pull warns and goes on (exit 0); status lists the campaign as skipped', async () => {
    const s = await sim({ campaigns: 2, records: 5, unknownTypeCampaigns: 1 });
    const db = join(tempDir(), 'm.db');
    const pull = await cli(['pull', '--db', db], { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(pull.code).toBe(0);
    expect(pull.stderr).toMatch(
      /warning: campaign interview-3-.* has type LIVE_INTERVIEW, which campaign-sync does not know how to read: skipped/,
    );
    expect(pull.stdout).toMatch(/skipped: interview-3-.*type LIVE_INTERVIEW is not supported/);
    const status = JSON.parse((await cli(['status', '--db', db, '--json'])).stdout);
    expect(status.skipped).toEqual([expect.objectContaining({ type: 'LIVE_INTERVIEW', reason: 'campaign type not supported' })]);
    expect((await cli(['status', '--db', db])).stdout).toMatch(/skipped: interview-3-.*campaign type LIVE_INTERVIEW is not supported/);
  });
});
