/**
 * pg is loaded only for a postgres:// --db (a light start for SQLite commands): no module that a
 * SQLite command reaches through static imports may import the `pg` driver. The PostgreSQL parts sit
 * behind `await import(…)` (app/*-pg.ts, commands/*-pg.ts), which this walk does not follow.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../../../src/', import.meta.url));
const STATIC = /^(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gm;

/** The specifiers a file imports statically (type-only imports are erased and skipped). */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(STATIC)) if (!/^(?:import|export)\s+type\s/.test(m[0])) out.push(m[1] as string);
  return out;
}

/** Every source file reached from `entry` by static imports, with the ones importing pg. */
function reach(entry: string): { files: Set<string>; pgUsers: string[] } {
  const files = new Set<string>();
  const pgUsers: string[] = [];
  const todo = [entry];
  while (todo.length > 0) {
    const f = todo.pop() as string;
    if (files.has(f)) continue;
    files.add(f);
    for (const spec of staticImports(f)) {
      if (spec === 'pg' || spec.startsWith('pg/')) pgUsers.push(f.slice(SRC.length));
      if (!spec.startsWith('.')) continue;
      const ts = resolve(dirname(f), spec).replace(/\.js$/, '.ts');
      if (existsSync(ts)) todo.push(ts);
    }
  }
  return { files, pgUsers };
}

describe('pg stays unloaded for SQLite', () => {
  const entries = [
    'cli.ts',
    ...readdirSync(join(SRC, 'commands'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('-pg.ts') && !f.endsWith('.test.ts'))
      .map((f) => `commands/${f}`),
  ];

  it.each(entries)('%s reaches no static import of pg', (entry) => {
    const { files, pgUsers } = reach(join(SRC, entry));
    expect(files.size).toBeGreaterThan(1);
    expect(pgUsers).toEqual([]);
  });

  it('the walk does find pg where it is imported statically', () => {
    expect(reach(join(SRC, 'store/pg/database.ts')).pgUsers).toContain('store/pg/database.ts');
  });
});
