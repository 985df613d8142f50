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

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

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

/** `store/sqlite/sink.ts` -> `store`; `cli.ts` -> `cli.ts`. */
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

/** Whether every import of `spec` (its last path part, e.g. `port.js`) in `path` is `import type`. */
function typeOnly(path: string, spec: string): boolean {
  const text = readFileSync(path.startsWith('/') ? path : join(SRC, path), 'utf8');
  const statements = [...text.matchAll(/(?:^|\n)\s*((?:import|export)\s[^;]*?\sfrom\s+'([^']+)')/g)].filter((m) =>
    (m[2] as string).endsWith(`/${spec}`),
  );
  const dynamic = [...text.matchAll(/import\(\s*'([^']+)'\s*\)/g)].some((m) => (m[1] as string).endsWith(`/${spec}`));
  return !dynamic && statements.every((m) => /^(?:import|export)\s+type\s/.test(m[1] as string));
}

/** Each file's imports within src/, as paths relative to src/ (type-only imports count: they tie the files' meanings). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const file of files(SRC)) {
    g.set(
      relative(SRC, file),
      imports(file).map((spec) => relative(SRC, resolve(file, '..', spec.replace(/\.js$/, '.ts')))),
    );
  }
  return g;
}

/**
 * Every import circle in src/: the groups of files that reach one another through imports (Tarjan's
 * strongly connected components), each as its files sorted and joined by ' <-> '.
 */
function circles(g: Map<string, string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || (g.get(v) ?? []).includes(v)) found.push(group.sort().join(' <-> '));
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found.sort();
}

describe('no import circles', () => {
  it('no file of src/ reaches itself through its imports', () => {
    expect(circles(graph())).toEqual([]);
  });

  it('the check finds a circle, type-only imports included', () => {
    const g = new Map([
      ['store/sqlite/db.ts', ['store/sqlite/schema.ts']],
      ['store/sqlite/schema.ts', ['store/sqlite/upserts.ts']],
      ['store/sqlite/upserts.ts', ['store/sqlite/db.ts', 'core/json.ts']],
      ['core/json.ts', []],
    ]);
    expect(circles(g)).toEqual(['store/sqlite/db.ts <-> store/sqlite/schema.ts <-> store/sqlite/upserts.ts']);
    expect(imports(join(SRC, 'store', 'sqlite', 'upserts.ts')).some((s) => s === './db.js')).toBe(true); // `import type { Db }`
  });
});

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

/** Commands reach a mirror only through app/factory.ts and the port (store/port.ts), and see only its types. */
describe('one mirror, chosen once', () => {
  it("no command imports from store/ but the port, and no file of app/ or commands/ is one backend's", () => {
    const found: string[] = [];
    for (const [file, targets] of graph()) {
      const layer = file.split('/')[0];
      if (layer !== 'app' && layer !== 'commands') continue;
      if (/-(pg|sqlite)\.ts$/.test(file)) found.push(`${file}: a backend's file`);
      if (layer !== 'commands') continue;
      for (const t of targets) if (t.startsWith('store/') && t !== 'store/port.ts') found.push(`${file} imports ${t}`);
      // The port's types only: its values would be a backend's code reached without the factory.
      if (targets.includes('store/port.ts') && !typeOnly(file, 'port.js')) found.push(`${file} imports values of the port`);
    }
    expect(found).toEqual([]);
  });

  // Decided as the settings are built (config/config.ts dbKindOf), so the password warnings that
  // go with a PostgreSQL URL are the settings' too; app/factory.ts opens the backend they name.
  it('which backend --db names is decided in config/config.ts alone', () => {
    const deciders = files(SRC)
      .filter((f) => /isPgUrl\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(SRC, f))
      .sort();
    expect(deciders).toEqual(['config/config.ts', 'core/pg-url.ts']);
  });
});

/**
 * The floors of store/ (STYLE.md): model/ (what every backend shares) -> port.ts (the interfaces and
 * each backend's capabilities, importing model/ only) -> sqlite/ | pg/ (peers implementing the port,
 * each importing only the port, model/ and what lies below store/). The root of store/ holds the
 * port alone.
 */
function storeFloor(file: string): 'model' | 'port' | 'sqlite' | 'pg' | undefined {
  if (file.startsWith('store/model/')) return 'model';
  if (file === 'store/port.ts') return 'port';
  if (file.startsWith('store/sqlite/')) return 'sqlite';
  if (file.startsWith('store/pg/')) return 'pg';
  return undefined;
}

const STORE_MAY_USE: Record<string, string[]> = {
  model: ['model'],
  port: ['model'],
  sqlite: ['sqlite', 'port', 'model'],
  pg: ['pg', 'port', 'model'],
};

describe('the floors of store/', () => {
  it('model/ -> port.ts -> sqlite/ | pg/: no file imports a floor above it or its peer', () => {
    const found: string[] = [];
    for (const [file, targets] of graph()) {
      const from = storeFloor(file);
      if (from === undefined) continue;
      for (const t of targets) {
        if (!t.startsWith('store/')) continue;
        const to = storeFloor(t);
        if (to === undefined || !(STORE_MAY_USE[from] as string[]).includes(to)) found.push(`${file} imports ${t}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('the root of store/ holds the port alone, and every file of store/ is on a floor', () => {
    const stray = files(join(SRC, 'store'))
      .map((f) => relative(SRC, f))
      .filter((f) => storeFloor(f) === undefined);
    expect(stray).toEqual([]);
    expect(readdirSync(join(SRC, 'store')).sort()).toEqual(['model', 'pg', 'port.ts', 'sqlite']);
  });

  it('the check sees a backend borrowing from its peer', () => {
    expect(storeFloor('store/pg/sink.ts')).toBe('pg');
    expect((STORE_MAY_USE.pg as string[]).includes(storeFloor('store/sqlite/db.ts') as string)).toBe(false);
    expect((STORE_MAY_USE.port as string[]).includes('sqlite')).toBe(false);
  });
});

describe('one SQLite driver per Node', () => {
  it('no test or bench loads the better-sqlite3 package itself: store/sqlite/driver.ts picks 12 or 13 by Node', () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const files = (dir: string): string[] =>
      readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : /\.(ts|js|mjs)$/.test(e.name) ? [join(dir, e.name)] : [],
      );
    const loading = [...files('test'), ...files('bench')].filter((f) =>
      /^import (?!type )[^;]*from 'better-sqlite3(-v13)?';/m.test(readFileSync(join(root, f), 'utf8')),
    );
    expect(loading).toEqual([]);
  });
});

/** Names are unique where they meet (STYLE.md): two exported types of one name cost every reader a lookup. */
describe('one name, one thing', () => {
  it('no exported name is defined twice in src/ (migration versions aside: one per backend)', () => {
    const where = new Map<string, string[]>();
    for (const file of files(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(
        /^export (?:declare )?(?:async )?(?:abstract )?(?:function\*?|const|let|class|interface|type|enum) ([A-Za-z_$][\w$]*)/gm,
      )) {
        const name = m[1] as string;
        if (/^V\d+$/.test(name) && file.includes('/migrations/')) continue;
        where.set(name, [...(where.get(name) ?? []), relative(SRC, file)]);
      }
    }
    const twice = [...where].filter(([, at]) => at.length > 1).map(([name, at]) => `${name}: ${at.join(', ')}`);
    expect(twice).toEqual([]);
  });
});
