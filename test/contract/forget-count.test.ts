/**
 * `forget --older-than --dry-run`, on SQLite, NDJSON and PostgreSQL alike: the counts it prints are
 * the counts the erasure then reports (every table, the tables of copies, every NDJSON file), and it
 * erases nothing. The store counts with the erasure's own plan (store/port.ts countOlderThan), so a
 * count that drifted from the erasure fails here on the kind whose code drifted.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim } from '../helpers/index.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';

const RECORDS = 20;

interface CountDoc {
  dry_run?: boolean;
  before: string;
  removed: Record<string, number>;
  copies: Record<string, number>;
  files: Array<{ path: string; lines: number; changed: number }>;
}

async function forgetJson(m: Mirror, s: RunningSimulator, ...args: string[]): Promise<CountDoc> {
  const r = await m.run(s, 'forget', ...args, '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as CountDoc;
}

/** Everything the mirror holds that an erasure could touch: records, every stored copy, the quarantine. */
async function everything(m: Mirror) {
  return {
    records: await m.records(),
    rows: await m.rows(),
    quarantine: await m.state('SELECT raw FROM quarantine ORDER BY raw'),
  };
}

describe.each(MIRRORS)('forget --older-than --dry-run (%s)', (kind) => {
  it('counts what the erasure then erases, table by table and file by file, and erases nothing', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    // Malformed records fill the quarantine (a table of copies); a lookback after a re-score makes a past version.
    const s = await sim({ campaigns: 2, records: RECORDS, malformed: { every: 6, kinds: ['score'] } });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const cut = cutOf(servedResults(s, RECORDS));
    const campaign = s.data.campaigns.find((c) => c.type === 'ROLE_SUBMISSION');
    if (campaign === undefined) throw new Error('the simulator serves no role campaign');
    const old = s.data.roleResult(campaign, 1, 'DETAILED');
    expect(Date.parse(String(old.created_at))).toBeLessThan(cut.at);
    const rescored = await fetch(`${s.url}/_simulator/results/${String(old.id)}/rescore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.apiKey}` },
    });
    expect(rescored.status).toBe(200);
    const days = Math.ceil((Date.now() - Date.parse(String(old.created_at))) / 86_400_000) + 1;
    expect((await m.run(s, 'pull', '--lookback', `${days}d`)).code).toBe(0);

    // A consumer of --since-last has read everything: a count hands it nothing new.
    const feed = async (table: string) => {
      if (kind === 'ndjson') return [];
      const out = join(mkdtempSync(join(tmpdir(), 'cs-feed-')), `${table}.ndjson`);
      const r = await m.run(s, 'export', '--table', table, '--format', 'ndjson', '-o', out, '--quiet', '--since-last', 'bi');
      expect(r.code, r.stderr).toBe(0);
      return readFileSync(out, 'utf8')
        .split('\n')
        .filter((l) => l !== '');
    };
    for (const t of ['session_results', 'role_results']) await feed(t);
    const held = await everything(m);
    // The cut lies in an hour-wide gap of the history: both runs cut in the same place.
    const dry = await forgetJson(m, s, '--older-than', cut.duration(), '--dry-run');
    expect(dry.dry_run).toBe(true);
    expect(await everything(m)).toEqual(held);
    for (const t of ['session_results', 'role_results']) expect(await feed(t)).toEqual([]);

    const done = await forgetJson(m, s, '--older-than', cut.duration(), '--yes');
    expect(done.dry_run).toBeUndefined();
    expect({ removed: dry.removed, copies: dry.copies, files: dry.files }).toEqual({
      removed: done.removed,
      copies: done.copies,
      files: done.files,
    });
    // Something of every kind was there to count.
    if (kind === 'ndjson') {
      expect(dry.files.map((f) => f.lines).every((n) => n > 0)).toBe(true);
      expect(dry.files.length).toBe(2);
    } else {
      expect(dry.removed.session_results).toBeGreaterThan(0);
      expect(dry.removed.role_results).toBeGreaterThan(0);
      expect(dry.removed.score_details).toBeGreaterThan(0);
      expect(dry.removed.eval_results).toBeGreaterThan(0);
      expect(dry.copies.past_versions).toBeGreaterThan(0);
    }
    expect(dry.copies.quarantine).toBeGreaterThan(0);
    expect((await m.records()).size).toBeLessThan(held.records.size);
  });
});
