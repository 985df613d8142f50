/**
 * CSV export runs on one thread (export/csv-table.ts). Nothing on the way of an export
 * starts a worker thread, boots one early in the launcher, or forces V8's garbage collector (a batch's
 * dead blobs are left to V8: a million-row export stays well under the memory ceiling of
 * export-memory.test.ts without it).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The launcher, the bundler's script, and every source file an export runs. */
function exportFiles(): string[] {
  const exportDir = join(ROOT, 'src/export');
  return [
    'bin/campaign-sync.js',
    'scripts/bundle.js',
    'src/commands/export.ts',
    'src/commands/export-plan.ts',
    'src/commands/export-since.ts',
    'src/store/sqlite/snapshot.ts',
    'src/store/sqlite/export-source.ts',
    'src/store/sqlite/export-sql.ts',
    'src/store/pg/export-source.ts',
    'src/store/pg/export.ts',
    ...readdirSync(exportDir).map((f) => `src/export/${f}`),
  ];
}

describe('export on one thread', () => {
  it('starts no worker thread and forces no garbage collection', () => {
    for (const file of exportFiles()) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      expect(text, file).not.toMatch(/worker_threads|new Worker\(|--expose-gc|runInNewContext|node:vm/);
    }
  });

  it("the bundle's entry points are the CLI and the launcher's compile-cache check: no worker module beside them", () => {
    const bundle = readFileSync(join(ROOT, 'scripts/bundle.js'), 'utf8');
    expect(bundle).toMatch(/entryPoints: \{ main: 'src\/main\.ts', 'compile-cache': 'src\/core\/compile-cache\.ts' \}/);
    expect(readdirSync(join(ROOT, 'dist/bundle')).filter((f) => /worker/.test(f))).toEqual([]);
  });
});
