/**
 * No export answers nothing in silence, on every kind (./mirrors.ts says how to add a case):
 * `--as-of` takes `--campaign` by id or by name as every other export does, and one that names
 * nothing is exit 2 naming it; an `--as-of` before the mirror's history says where it starts; a
 * database that keeps an NDJSON pull's state says where its records are instead of exporting an
 * empty table.
 */
import { describe, expect, it } from 'vitest';
import { sharedSim } from '../helpers/shared-sim.js';
import { MIRRORS, type Mirror, open, unsupported } from './mirrors.js';

/** Data lines of a CSV export (the header left out). */
const dataLines = (csv: string) => csv.split('\r\n').filter(Boolean).slice(1);

/** An hour from now: the mirror as it is now, whatever the clock did meanwhile. */
const later = () => new Date(Date.now() + 3_600_000).toISOString();

async function pulled(kind: (typeof MIRRORS)[number]) {
  const s = await sharedSim({ campaigns: 2, records: 12 });
  const m: Mirror = open(kind);
  const pull = await m.run(s, 'pull');
  expect(pull.code, pull.stderr).toBe(0);
  return { s, m };
}

describe.each(MIRRORS)('export answers or says why (%s)', (kind) => {
  it('--as-of takes --campaign by id or by name; one that names nothing is exit 2 naming it', async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    const { s, m } = await pulled(kind);
    const at = later();
    for (const c of s.data.campaigns) {
      const table = c.type === 'ROLE_SUBMISSION' ? 'role-results' : 'session-results';
      const byId = await m.run(s, 'export', '--table', table, '--as-of', at, '--campaign', c.id);
      expect(byId.code, byId.stderr).toBe(0);
      expect(dataLines(byId.stdout).length, c.id).toBeGreaterThan(0);
      const byName = await m.run(s, 'export', '--table', table, '--as-of', at, '--campaign', c.name as string);
      expect(byName.code, byName.stderr).toBe(0);
      expect(byName.stdout).toBe(byId.stdout);
    }
    const none = await m.run(s, 'export', '--table', 'session-results', '--as-of', at, '--campaign', 'no-such-campaign');
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr.trim().split('\n')).toEqual([
      'campaign-sync: --campaign: no campaign with the id, name or id prefix "no-such-campaign" in this database (see `campaign-sync status`)',
    ]);
  });

  it('an --as-of before the history says where the history starts', async (ctx) => {
    if (unsupported(kind, 'versions', ctx)) return;
    const { s, m } = await pulled(kind);
    const before = await m.run(s, 'export', '--table', 'role-results', '--as-of', '2001-02-03');
    expect(before.code, before.stderr).toBe(0);
    expect(dataLines(before.stdout)).toEqual([]);
    const said = /^warning: --as-of 2001-02-03T00:00:00\.000Z is before the mirror's history: history starts at (\S+)$/m.exec(
      before.stderr,
    );
    expect(said, before.stderr).not.toBeNull();
    // The start is a time of this mirror's first pull, when its first versions were recorded.
    const start = Date.parse(said?.[1] as string);
    expect(start).toBeGreaterThan(Date.parse('2001-02-03'));
    expect(start).toBeLessThanOrEqual(Date.now());
    // An --as-of within the history says nothing of it.
    const within = await m.run(s, 'export', '--table', 'role-results', '--as-of', later());
    expect(within.code, within.stderr).toBe(0);
    expect(within.stderr).not.toContain('history starts at');
  });

  it('an export of a database whose records are NDJSON files names their folder, exit 2, and writes nothing', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const { s, m } = await pulled(kind);
    const out = m.pullArgs[m.pullArgs.indexOf('--out') + 1];
    for (const args of [
      ['--table', 'session-results'],
      ['--table', 'latest_results', '--format', 'ndjson'],
      ['--table', 'role-results', '--as-of', later()],
    ]) {
      const r = await m.run(s, 'export', ...args);
      if (kind !== 'ndjson') {
        // The records are in the tables: they are exported.
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout.trim(), args.join(' ')).not.toBe('');
        continue;
      }
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      const line = r.stderr.trim().split('\n');
      expect(line, args.join(' ')).toHaveLength(1);
      expect(line[0]).toContain('it keeps the state of an NDJSON pull');
      expect(line[0]).toContain(`whose records are the files in ${out}`);
    }
  });
});
