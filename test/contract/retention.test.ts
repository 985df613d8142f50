/**
 * Retention on every kind of mirror beyond `forget --older-than` (./audit.test.ts): `pull --retention`
 * erases what is older once a day, and records when in the mirror (./mirrors.ts says how to add a
 * case). The bytes of SQLite's and NDJSON's files, watch and a profile's retention are
 * test/component/commands/retention.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { cutOf, servedResults } from '../helpers/history.js';
import { sim } from '../helpers/index.js';
import { MIRRORS, open, unsupported } from './mirrors.js';

const RECORDS = 20;

interface PullDoc {
  retention?: { removed: { session_results: number; role_results: number }; files?: Array<{ lines: number }> };
}

describe.each(MIRRORS)('retention (%s)', (kind) => {
  it('pull --retention erases what is older once a day, and records when', async (ctx) => {
    if (unsupported(kind, undefined, ctx)) return;
    const s = await sim({ campaigns: 2, records: RECORDS });
    const m = open(kind);
    expect((await m.run(s, 'pull')).code).toBe(0);
    const cut = cutOf(servedResults(s, RECORDS));
    const oldIds = new Set(cut.old.map((r) => r.id));
    const first = await m.run(s, 'pull', '--retention', cut.duration(), '--json');
    expect(first.code, first.stderr).toBe(0);
    const doc = JSON.parse(first.stdout) as PullDoc;
    // An NDJSON mirror counts the lines it took out of its files.
    if (kind === 'ndjson') expect(doc.retention?.files?.reduce((n, f) => n + f.lines, 0)).toBe(cut.old.length);
    else expect((doc.retention?.removed.session_results ?? 0) + (doc.retention?.removed.role_results ?? 0)).toBe(cut.old.length);
    const ids = async () => [...(await m.records()).keys()];
    expect((await ids()).filter((id) => oldIds.has(id))).toEqual([]);
    expect(Number((await m.state("SELECT count(*) AS n FROM meta WHERE key = 'retention_ran_at'"))[0]?.n)).toBe(1);
    // Within the day: not again (the old ones a --full without the retention brought back stay).
    expect((await m.run(s, 'pull', '--full')).code).toBe(0);
    const second = await m.run(s, 'pull', '--retention', cut.duration(), '--json');
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as PullDoc).retention).toBeUndefined();
    expect((await ids()).filter((id) => oldIds.has(id)).length).toBe(cut.old.length);
  });
});
