/**
 * The answers' plain checks (api/envelopes.ts, api/campaign-list.ts) against the zod schemas they
 * stand in for on the fast path: over every combination of usual and odd field values, a check
 * accepts exactly what its schema accepts, with the same data, and a rejected answer is reported
 * with zod's message. The settings (config/schema.ts) likewise keep zod's message for a value that
 * is not text. And a pull's start imports no zod at all.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCampaignPage } from '../../../src/api/campaign-list.js';
import { formatIssues, identitySchemas, isCampaign, toPage } from '../../../src/api/envelopes.js';
import { parseSettings, syncSchema } from '../../../src/config/schema.js';
import type { RequestInfo } from '../../../src/errors.js';

/** Every combination of the given values per key (a missing key where the value is `undefined`). */
function combinations(fields: Record<string, unknown[]>): Record<string, unknown>[] {
  let out: Record<string, unknown>[] = [{}];
  for (const [key, values] of Object.entries(fields)) {
    out = out.flatMap((o) => values.map((v) => (v === undefined ? { ...o } : { ...o, [key]: v })));
  }
  return out;
}

const ODD = [undefined, null, '', 'x', 0, 7, true, false, {}, [], ['x'], 12345678901234567890n];
const NOT_OBJECTS = [null, 'text', 3, true, 12n];
const info: RequestInfo = { method: 'GET', path: '/v1/campaigns' };

const campaigns = [
  ...NOT_OBJECTS,
  ...combinations({ id: ODD, name: ODD, type: [undefined, null, 'SESSION_COMPLETION', 5] }),
  ...combinations({ id: ['c-1'], display_name: ODD, created_at: ODD, extra: [undefined, { any: 1 }] }),
];

describe('the plain checks accept exactly what the schemas accept', () => {
  it('a campaign', () => {
    const { campaign } = identitySchemas();
    for (const c of campaigns)
      expect(
        isCampaign(c),
        JSON.stringify(c, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      ).toBe(campaign.safeParse(c).success);
  });

  it('a results page, with the same data', () => {
    const { page } = identitySchemas();
    const pages = [
      ...NOT_OBJECTS,
      ...combinations({ data: ODD, has_more: ODD, last_record_index: [undefined, null, 5, 'x'], more: [undefined, 1] }),
    ];
    for (const p of pages) {
      const ours = toPage(p);
      const theirs = page.safeParse(p);
      expect(
        ours.success,
        JSON.stringify(p, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
      ).toBe(theirs.success);
      if (ours.success && theirs.success) expect(ours.data).toEqual(theirs.data);
      if (!ours.success && !theirs.success) expect(formatIssues(ours.error)).toBe(formatIssues(theirs.error));
    }
  });

  it('a campaign list, enveloped or bare, with the same campaigns and the message of zod', () => {
    const { campaignList, campaignArray } = identitySchemas();
    const some = [
      { id: 'a', type: 'SESSION_COMPLETION' },
      { id: 'b', name: null, extra: [1] },
    ];
    const lists = [
      ...NOT_OBJECTS,
      ...combinations({ data: [...ODD, some, [...some, { name: 'no id' }], [{ id: 'a' }, 5]], has_more: ODD }),
      ...campaigns.map((c) => [c]),
      ...campaigns.map((c) => ({ data: [{ id: 'first' }, c], has_more: false })),
    ];
    for (const l of lists) {
      const schema = Array.isArray(l) ? campaignArray : campaignList;
      const theirs = schema.safeParse(l);
      const label = JSON.stringify(l, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
      if (theirs.success) {
        const campaignsOf = (theirs.data as { data?: unknown }).data ?? theirs.data;
        expect(parseCampaignPage(l, info).campaigns, label).toEqual(campaignsOf);
      } else {
        expect(() => parseCampaignPage(l, info), label).toThrow(`unexpected response: ${formatIssues(theirs.error)}`);
      }
    }
  });
});

describe('settings that are not text', () => {
  it('are reported as zod reports them, and text still parses without it', () => {
    expect(() => parseSettings(syncSchema, { pageSize: 7 })).toThrow('Invalid input: expected string, received number');
    expect(() => parseSettings(syncSchema, { pageSize: '7', lookback: null })).toThrow('Invalid input: expected string, received null');
    // The first problem in the schema's order is the one named: --report-type comes before --page-size.
    expect(() => parseSettings(syncSchema, { pageSize: 7, reportType: 'FULL' })).toThrow('--report-type: must be DETAILED or OVERALL');
    expect(parseSettings(syncSchema, { pageSize: '7', json: true })).toMatchObject({ pageSize: 7, reportType: 'DETAILED' });
  });
});

describe("a pull's start", () => {
  /** Every module a file imports at load time (static imports; `import type` and `import()` excluded), from src/. */
  function staticGraph(entry: string): Map<string, string[]> {
    const graph = new Map<string, string[]>();
    const visit = (file: string) => {
      if (graph.has(file)) return;
      const text = readFileSync(file, 'utf8');
      const specs = [
        ...text.matchAll(/(?:^|\n)\s*import\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/g),
        ...text.matchAll(/(?:^|\n)\s*import\s+'([^']+)'/g),
      ].map((m) => m[1] as string);
      graph.set(file, specs);
      for (const s of specs) if (s.startsWith('.')) visit(resolve(dirname(file), s.replace(/\.js$/, '.ts')));
    };
    visit(entry);
    return graph;
  }

  it('imports no zod: the answers and settings of a no-op pull are checked without it', () => {
    const src = fileURLToPath(new URL('../../../src/', import.meta.url));
    const loaded = [...staticGraph(join(src, 'main.ts')), ...staticGraph(join(src, 'commands/pull.ts'))];
    const zodUsers = loaded.filter(([, specs]) => specs.some((s) => s === 'zod' || s.startsWith('zod/'))).map(([f]) => f);
    expect(loaded.length).toBeGreaterThan(30);
    expect(zodUsers).toEqual([]);
  });
});
