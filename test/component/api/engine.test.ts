/**
 * The CLI's V8 settings (src/api/engine.ts tuneEngine, applied where undici is loaded): WebAssembly (undici's HTTP parser) stays
 * on Liftoff, so no background TurboFan job holds the process open at exit. Checked in a child
 * process with V8's own test hook, against a control run without the setting on the same Node.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ENGINE = fileURLToPath(new URL('../../../dist/api/engine.js', import.meta.url));

// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const WASM = [
  0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 127, 127, 1, 127, 3, 2, 1, 0, 7, 7, 1, 3, 97, 100, 100, 0, 0, 10, 9, 1, 7, 0, 32, 0, 32, 1,
  106, 11,
];

/** Whether a hot WebAssembly function is still Liftoff code, with or without tuneEngine() first. */
function staysOnLiftoff(tuned: boolean): boolean {
  const script = `
    const { tuneEngine } = await import(${JSON.stringify(ENGINE)});
    if (${tuned}) tuneEngine();
    const module = new WebAssembly.Module(new Uint8Array(${JSON.stringify(WASM)}));
    const { add } = new WebAssembly.Instance(module).exports;
    let s = 0;
    for (let i = 0; i < 2e6; i++) s = add(s, 1);
    // Tier-up runs on a background thread: give it time (a loaded machine is slow), stop once it happened.
    for (let waited = 0; waited < ${tuned ? 1000 : 10_000} && %IsLiftoffFunction(add); waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log(JSON.stringify(%IsLiftoffFunction(add)));`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out) as boolean;
}

// Node 24's V8 freezes its flags once running: setFlagsFromString no longer changes them, and
// tuneEngine does nothing there (docs/performance.md, "Whole processes").
const frozenFlags = Number(process.versions.node.split('.')[0]) >= 24;

describe('the engine settings', () => {
  it.skipIf(frozenFlags)('keep a hot WebAssembly function on Liftoff, where V8 alone tiers it up', () => {
    expect(staysOnLiftoff(false)).toBe(false);
    expect(staysOnLiftoff(true)).toBe(true);
  });
});
