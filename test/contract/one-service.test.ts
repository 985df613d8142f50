/**
 * One mirror, one service, on SQLite, NDJSON and PostgreSQL alike (./mirrors.ts says how to add a
 * case): the first pull records the service's base URL, normalised (store/model/service.ts); a pull,
 * watch, reconcile, quarantine retry or `campaigns` with another one is refused with exit 2 naming
 * both, before anything is asked or written; `--switch-service` records the new one; a mirror from
 * before the rule, or one holding nothing of the service it records, adopts the URL it is pulled with.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { SERVICE_KEY } from '../../src/store/model/service.js';
import { Database } from '../../src/store/sqlite/driver.js';
import { sim } from '../helpers/index.js';
import { pgClient } from '../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../helpers/pg-server.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';

/** The service the mirror records. */
async function recorded(m: Mirror): Promise<unknown> {
  return (await m.state(`SELECT value FROM meta WHERE key = '${SERVICE_KEY}'`))[0]?.value;
}

/** Runs `command` against `m` with the base URL written as `url` (the key is `s`'s). */
function at(m: Mirror, s: RunningSimulator, url: string, command: string, ...args: string[]) {
  return m.run({ ...s, url }, command, ...args);
}

/**
 * Makes `m` what a release before the rule left: its schema one version back, no service recorded
 * (SQLite's file, or PostgreSQL's schema, written directly).
 */
async function asBeforeTheRule(m: Mirror): Promise<void> {
  if (m.kind === 'postgres') {
    const c = await pgClient();
    try {
      await c.query(`SET search_path TO "${m.args[1]}"`);
      await c.query('DELETE FROM meta WHERE key = $1', [SERVICE_KEY]);
      await c.query("UPDATE meta SET value = (value::int - 1)::text WHERE key = 'schema_version'");
    } finally {
      await c.end();
    }
    return;
  }
  const db = new Database(m.args[1] as string);
  try {
    db.prepare('DELETE FROM meta WHERE key = ?').run(SERVICE_KEY);
    db.pragma(`user_version = ${(db.pragma('user_version', { simple: true }) as number) - 1}`);
  } finally {
    db.close();
  }
}

describe.each(MIRRORS)('one mirror, one service (%s)', (kind) => {
  it('the first pull records the base URL normalised; another spelling of it is the same service; another service is refused with exit 2 by every command that syncs, naming both, before any request; --switch-service moves the mirror', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    // A quarantined record each, for `quarantine retry` to have something to read again.
    const s = await sim({ campaigns: 2, records: 5, malformed: { every: 5, kinds: ['score'] } });
    const other = await sim({ campaigns: 2, records: 5, seed: 'another service' });
    const m = open(kind);
    const { port } = new URL(s.url);
    // Upper-case scheme, a trailing /v1/: the service at http://127.0.0.1:<port>.
    const first = await at(m, s, `HTTP://127.0.0.1:${port}/v1/`, 'pull', '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(await recorded(m)).toBe(`http://127.0.0.1:${port}`);
    expect((await m.state('SELECT count(*) AS n FROM quarantine'))[0]?.n).toEqual(kind === 'postgres' ? '2' : 2);
    const again = await at(m, s, `http://127.0.0.1:${port}//`, 'pull', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(await recorded(m)).toBe(`http://127.0.0.1:${port}`);

    const held = await m.rows();
    const campaigns = await m.campaigns();
    const state = await m.state('SELECT stream, cursor, records FROM sync_state ORDER BY stream');
    const message = new RegExp(
      `^campaign-sync: CAMPAIGN_SYNC_BASE_URL: .* mirrors the service at http://127\\.0\\.0\\.1:${port}, not ${other.url.replace(/\./g, '\\.')}; one mirror mirrors one service: use another --db for .*, or, if the service moved there, pass --switch-service to record it \\(records and checkpoints stay\\)\\n$`,
    );
    for (const [command, ...args] of [
      ['pull'],
      ['watch', '--max-cycles', '1', '--interval', '1s'],
      ['reconcile'],
      ['quarantine', 'retry'],
      ['campaigns'],
    ] as string[][]) {
      const r = await m.run(other, command as string, ...args);
      expect(r.code, `${command}: ${r.stderr}`).toBe(2);
      expect(r.stderr, command).toMatch(message);
      expect(r.stderr).not.toContain(TEST_PG_PASSWORD);
      // Refused before a request (campaigns asks for the list first; it stores nothing of it).
      if (command !== 'campaigns') expect(other.stats.requests, command).toBe(0);
    }
    expect(await m.rows()).toEqual(held);
    expect(await m.campaigns()).toEqual(campaigns);
    expect(await m.state('SELECT stream, cursor, records FROM sync_state ORDER BY stream')).toEqual(state);
    expect(await recorded(m)).toBe(`http://127.0.0.1:${port}`);

    // A switch to a URL that does not answer (a typo) is not kept: the run failed there.
    const gone = await sim({ campaigns: 2, records: 5 });
    const typo = gone.url;
    await gone.close();
    const mistyped = await at(m, s, typo, 'pull', '--switch-service', '--max-retries', '0');
    expect(mistyped.code, mistyped.stderr).toBe(5);
    expect(await recorded(m)).toBe(`http://127.0.0.1:${port}`);
    // The service moved: --switch-service records the new URL, and the old one is another service now.
    const moved = await m.run(other, 'pull', '--switch-service', '--json');
    expect(moved.code, moved.stderr).toBe(0);
    expect(await recorded(m)).toBe(other.url);
    // The old URL's lists went with it: what the service at the new URL does not list is unlisted.
    const status = JSON.parse((await m.run(other, 'status', '--json')).stdout) as {
      streams: Array<{ campaign_id: string; unlisted_since: string | null }>;
    };
    const listed = new Set(other.data.campaigns.map((c) => c.id));
    for (const st of status.streams) expect(st.unlisted_since === null, st.campaign_id).toBe(listed.has(st.campaign_id));
    const back = await m.run(s, 'pull');
    expect(back.code).toBe(2);
    expect(back.stderr).toContain(`mirrors the service at ${other.url}, not http://127.0.0.1:${port};`);
  });

  it('a mirror from before the rule records no service: it adopts the first URL it is pulled with, then holds to it', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 5 });
    const other = await sim({ campaigns: 2, records: 5, seed: 'another service' });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    await asBeforeTheRule(m);
    expect(await recorded(m)).toBeUndefined();
    const adopted = await m.run(other, 'pull', '--json');
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(await recorded(m)).toBe(other.url);
    expect((await m.run(s, 'pull')).code).toBe(2);
  });

  it('a first pull at a URL that never answered leaves the mirror holding nothing of it: the right URL is taken then', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 5 });
    const gone = await sim({ campaigns: 2, records: 5 });
    const typo = gone.url;
    await gone.close();
    const m = open(kind);
    const failed = await at(m, s, typo, 'pull', '--max-retries', '0');
    expect(failed.code, failed.stderr).toBe(5);
    // A SQLite file it created and committed nothing to is taken back; a PostgreSQL schema, which
    // other workers may share, stays with the URL it recorded.
    if (kind === 'postgres') expect(await recorded(m)).toBe(typo);
    else expect(existsSync(m.args[1] as string)).toBe(false);
    const right = await m.run(s, 'pull', '--json');
    expect(right.code, right.stderr).toBe(0);
    expect(await recorded(m)).toBe(s.url);
    // Now it holds the service's campaigns and streams: the other URL is refused.
    expect((await at(m, s, typo, 'pull', '--max-retries', '0')).code).toBe(2);
  });

  it('campaigns on a new mirror records the service too', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: 5 });
    const other = await sim({ campaigns: 2, records: 5, seed: 'another service' });
    const m = open(kind);
    expect((await m.run(s, 'campaigns')).code).toBe(0);
    expect(await recorded(m)).toBe(s.url);
    const r = await m.run(other, 'pull');
    expect(r.code).toBe(2);
    expect(other.stats.requests).toBe(0);
  });
});
