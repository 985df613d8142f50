import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order files start in: failed last time first, then the longest first, whatever their project.
 * vitest's own sequencer runs the projects one after the other by name (component, e2e, soak, unit),
 * so the soak project's minute-long files started last and ran on alone at the end of every run. With
 * the longest first, the short files fill the workers around them. Durations come from vitest's
 * cache of the last run (node_modules/.vite); a file it has never timed counts as SLOW_GUESS_MS in
 * the soak project and as 0 elsewhere, so a fresh checkout (CI) still starts the soak files first.
 */
const SLOW_GUESS_MS = 60_000;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const root = this.ctx.config.root;
    const known = (spec: TestSpecification) => {
      const result = cache.getFileTestResults(`${spec.project.name}:${relative(root, spec.moduleId)}`);
      const guess = spec.project.name === 'soak' ? SLOW_GUESS_MS : 0;
      return { failed: result?.failed === true, ms: result?.duration ?? guess };
    };
    const keyed = files.map((spec) => ({ spec, ...known(spec) }));
    keyed.sort((a, b) => Number(b.failed) - Number(a.failed) || b.ms - a.ms);
    return keyed.map((k) => k.spec);
  }
}
