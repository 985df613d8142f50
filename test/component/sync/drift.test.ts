/**
 * Drift: the field paths and enumeration values a stream's records carry, compared pass to pass.
 * test/contract/audit.test.ts keeps what appears (refused by `--contract strict`, then reported once
 * by `status`); here, what disappears, the flag's values and the walker. SQLite, NDJSON and
 * PostgreSQL alike.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { streamId } from '../../../src/core/types.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';
import { Database } from '../../../src/store/sqlite/driver.js';
import { StreamDrift } from '../../../src/sync/drift.js';
import { driftOf } from '../../helpers/drift.js';
import { sim, tempDir } from '../../helpers/index.js';
import { describePg, freshSchema, PG_URL, pgRows } from '../../helpers/pg.js';
import { runCli } from '../../helpers/run-cli.js';

type Kind = 'sqlite' | 'ndjson' | 'pg';

interface Mirror {
  /** Where the mirror is, as flags. */
  args: string[];
  env: Record<string, string>;
  /** Rows of a query on the database (the checkpoints' for NDJSON). */
  rows(sql: string): Promise<Array<Record<string, unknown>>>;
}

function mirror(kind: Kind): Mirror {
  if (kind === 'pg') {
    const schema = freshSchema();
    return {
      args: ['--pg-schema', schema],
      env: { CAMPAIGN_SYNC_DB: PG_URL },
      rows: (sql) => pgRows(schema, sql),
    };
  }
  const dir = tempDir();
  const db = join(dir, 'mirror.db');
  const out = join(dir, 'out');
  const rows = async (sql: string) => {
    const d = new Database(db, { readonly: true });
    try {
      return d.prepare(sql).all() as Array<Record<string, unknown>>;
    } finally {
      d.close();
    }
  };
  return {
    args: kind === 'ndjson' ? ['--db', db, '--out', out] : ['--db', db],
    env: {},
    rows,
  };
}

function cases(kind: Kind) {
  let now = Date.UTC(2026, 10, 1);
  let s: RunningSimulator;
  let m: Mirror;
  const pull = (...extra: string[]) =>
    runCli(['pull', ...m.args, '--base-url', s.url, '--json', ...extra], { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, ...m.env } });
  const statusDoc = async () =>
    driftOf(await runCli(['status', ...(kind === 'ndjson' ? m.args.slice(0, 2) : m.args), '--json'], { env: m.env }));
  const start = async () => {
    s = await sim({ campaigns: 2, records: 30, growth: { count: 5, windowMs: 60_000 }, now: () => now });
    m = mirror(kind);
  };

  it('a disappeared field is reported after a full read only, once', async () => {
    await start();
    s.quirks.drift = true;
    now += 60_000;
    // The baseline holds the new field (records that arrived since the start).
    expect((await pull()).code).toBe(0);
    s.quirks.drift = false;
    now += 60_000;
    // An incremental pass reads only the newest records: too little to say a field disappeared.
    expect((await pull()).code).toBe(0);
    expect(await statusDoc()).toEqual([]);
    expect((await pull('--full')).code).toBe(0);
    const changes = await statusDoc();
    const shown = changes.map((c) => [c.stream.includes('/role/') ? 'role' : 'session', c.change, c.kind, c.value]);
    expect(shown.sort()).toEqual(
      [
        ['role', 'disappeared', 'field', 'assessment_version'],
        ['role', 'disappeared', 'recommendation_status', 'ON_HOLD'],
        ['session', 'disappeared', 'field', 'assessment_version'],
      ].sort(),
    );
    expect(changes.every((c) => c.record_id.length > 0)).toBe(true);
    expect(await statusDoc()).toEqual([]);
  });
}

describe.each(['sqlite', 'ndjson'] as const)('drift (%s)', (kind) => cases(kind));

describePg('drift (pg)', () => cases('pg'));

describe('--contract', () => {
  it('takes warn or strict; anything else is a usage error (exit 2), from the flag or the environment', async () => {
    const db = join(tempDir(), 'm.db');
    const flag = await runCli(['pull', '--db', db, '--base-url', 'http://127.0.0.1:9', '--contract', 'lenient'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--contract');
    const env = await runCli(['pull', '--db', db, '--base-url', 'http://127.0.0.1:9'], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k', CAMPAIGN_SYNC_CONTRACT: 'lenient' },
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('CAMPAIGN_SYNC_CONTRACT');
  });
});

describe('the drift walker', () => {
  const id = streamId('c1', 'role', 'DETAILED');
  const rec = (record: Record<string, unknown>) => ({ record, id: String(record.id), orderIndex: 1n, raw: '' });

  it('keeps no personal value: keys that are no identifiers are `*`, values that are no keys are (other)', () => {
    const d = new StreamDrift(id, [], 'warn');
    d.begin();
    const page = d.page([
      rec({
        id: 'r1',
        recommendation_status: 'ana.o.brien@example.com',
        by_email: { 'ana@example.com': 1, 'zoë@example.com': 2 },
        score_details: [{ eval_results: [{ skill: { key: 'JUDGMENT', label: 'x' } }] }],
        skills: [{ key: 'Ana Smith' }],
      }),
    ]);
    const items = (page?.items ?? []).map((i) => `${i.kind}:${i.value}`);
    expect(items).toContain('recommendation_status:(other)');
    expect(items).toContain('field:by_email.*');
    expect(items).toContain('skill:JUDGMENT');
    expect(items).toContain('field:score_details[].eval_results[].skill.key');
    expect(items.join(' ')).not.toContain('@');
    expect(items.join(' ')).not.toContain('Ana');
    expect(page?.report).toBe(false);
  });

  it('reports a page new paths only once, and strict refuses them only past the baseline', () => {
    const known = [
      { kind: 'field' as const, value: 'id', present: true },
      { kind: 'field' as const, value: 'a', present: true },
      { kind: 'field' as const, value: 'a[].b', present: true },
    ];
    const d = new StreamDrift(id, known, 'strict');
    d.begin();
    expect(d.page([rec({ id: 'r1', a: [{ b: 1 }] })])).toBeUndefined();
    expect(() => d.page([rec({ id: 'r\u001b2', a: [{ b: 1, c: 2 }] })])).toThrow(
      'record "r\\u001b2" brings a new field a[].c; --contract strict',
    );
  });
});
