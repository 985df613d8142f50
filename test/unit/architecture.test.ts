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

/** Whether every import of `spec` (its last path part, e.g. `mirror-port.js`) in `path` is `import type`. */
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
      ['store/db.ts', ['store/schema.ts']],
      ['store/schema.ts', ['store/mirror.ts']],
      ['store/mirror.ts', ['store/db.ts', 'core/json.ts']],
      ['core/json.ts', []],
    ]);
    expect(circles(g)).toEqual(['store/db.ts <-> store/mirror.ts <-> store/schema.ts']);
    expect(imports(join(SRC, 'store', 'mirror.ts')).some((s) => s === './db.js')).toBe(true); // `import type { Db }`
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

/** Commands reach a mirror only through app/factory.ts and the port (store/mirror-port.ts), and see only its types. */
describe('one mirror, chosen once', () => {
  it("no command imports from store/ but the port, and no file of app/ or commands/ is one backend's", () => {
    const found: string[] = [];
    for (const [file, targets] of graph()) {
      const layer = file.split('/')[0];
      if (layer !== 'app' && layer !== 'commands') continue;
      if (/-(pg|sqlite)\.ts$/.test(file)) found.push(`${file}: a backend's file`);
      if (layer !== 'commands') continue;
      for (const t of targets) if (t.startsWith('store/') && t !== 'store/mirror-port.ts') found.push(`${file} imports ${t}`);
      // The port's types only: its values would be a backend's code reached without the factory.
      if (targets.includes('store/mirror-port.ts') && !typeOnly(file, 'mirror-port.js')) found.push(`${file} imports values of the port`);
    }
    expect(found).toEqual([]);
  });

  it('which backend --db names is decided in app/factory.ts alone', () => {
    const deciders = files(SRC)
      .filter((f) => /isPgUrl\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(SRC, f))
      .sort();
    expect(deciders).toEqual(['app/factory.ts', 'store/pg/url.ts']);
  });
});

/**
 * store/sqlite/ and store/pg/ are peers: what both use is in store/model/ (or the port, or the
 * sinks' interface), never borrowed from the other. The SQLite side is store/sqlite/, store/sinks/sqlite.ts
 * and the files directly in store/ (its SQL, schema and migrations); pg/ may use, of store/, only
 * model/, the port and sinks/sink.ts.
 */
const SHARED_BY_BACKENDS = new Set(['store/mirror-port.ts', 'store/sinks/sink.ts']);

describe('the backends are peers', () => {
  it('store/pg/ imports nothing of the SQLite side, and store/sqlite/ nothing of store/pg/', () => {
    const found: string[] = [];
    for (const [file, targets] of graph()) {
      for (const t of targets) {
        if (!t.startsWith('store/')) continue;
        if (file.startsWith('store/pg/') && !t.startsWith('store/pg/') && !t.startsWith('store/model/') && !SHARED_BY_BACKENDS.has(t))
          found.push(`${file} imports ${t}`);
        if (file.startsWith('store/sqlite/') && t.startsWith('store/pg/')) found.push(`${file} imports ${t}`);
      }
    }
    expect(found).toEqual([]);
  });
});

describe('one SQLite driver per Node', () => {
  it('no test or bench loads the better-sqlite3 package itself: store/sqlite.ts picks 12 or 13 by Node', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
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
