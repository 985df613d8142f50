/**
 * The direction rule of STYLE.md: data flows config -> api -> sync -> store and out through export,
 * and a folder imports only from folders below it. Ranks, lowest first:
 *
 *   0  errors.ts                 error classes and exit codes
 *   1  core/                     shared vocabulary: int64, lossless JSON, clock, rate, domain types
 *   2  spec/                     the service's interface (paths, routing, strict schemas)
 *   3  config/ api/ store/ simulator/   (none of these four imports another)
 *   4  sync/ export/             (nor these two)
 *   5  app/                      wiring for a command
 *   6  commands/ ui/             (commands use ui; ui never uses commands)
 *   7  cli.ts
 *   8  main.ts
 *
 * A file may import from its own folder and from any lower rank; anything else fails here, named.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

const RANK: Record<string, number> = {
  'errors.ts': 0,
  core: 1,
  spec: 2,
  config: 3,
  api: 3,
  store: 3,
  simulator: 3,
  sync: 4,
  export: 4,
  app: 5,
  commands: 6,
  ui: 6,
  'cli.ts': 7,
  'main.ts': 8,
};

/** Same-rank folders that may use one another, and in which direction only. */
const ALLOWED_SIDEWAYS = new Set(['commands->ui']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** `store/sinks/sqlite.ts` -> `store`; `cli.ts` -> `cli.ts`. */
function layerOf(path: string): string {
  return relative(SRC, path).split('/')[0] as string;
}

function imports(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/g)) found.push(m[1] as string);
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) found.push(m[1] as string);
  return found.filter((spec) => spec.startsWith('.'));
}

function violations(): string[] {
  const out: string[] = [];
  for (const file of files(SRC)) {
    const from = layerOf(file);
    const fromRank = RANK[from];
    if (fromRank === undefined) {
      out.push(`${relative(SRC, file)}: folder ${from} has no rank in STYLE.md's layout`);
      continue;
    }
    for (const spec of imports(file)) {
      const target = resolve(file, '..', spec.replace(/\.js$/, '.ts'));
      const to = layerOf(target);
      if (to === from) continue;
      const toRank = RANK[to];
      const ok = toRank !== undefined && (toRank < fromRank || ALLOWED_SIDEWAYS.has(`${from}->${to}`));
      if (!ok) out.push(`${relative(SRC, file)} imports ${spec} (${from}, rank ${fromRank} -> ${to}, rank ${toRank ?? '?'})`);
    }
  }
  return out;
}

describe('the direction rule (STYLE.md)', () => {
  it('no file imports from a folder above it or beside it', () => {
    expect(violations()).toEqual([]);
  });

  it('the checker sees imports, dynamic imports and re-exports', () => {
    const all = files(SRC).flatMap(imports);
    expect(all.some((s) => s.includes('/commands/'))).toBe(true); // cli.ts's lazy import('./commands/…')
    expect(all.length).toBeGreaterThan(100);
  });
});
