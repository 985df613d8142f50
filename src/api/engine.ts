/**
 * V8 settings for a process that talks HTTP, applied before undici's parser is compiled. undici
 * parses HTTP with llhttp in WebAssembly; by default V8 recompiles its hot functions with TurboFan on a
 * background thread, and a process may not exit before that job ends, well after its last byte was
 * written. Liftoff's baseline code alone costs a long pull no more CPU.
 * Node 20 and 22 take the flag at run time; Node 24's V8 freezes its flags once started (no effect).
 *
 * Set where undici is loaded (api/undici.ts), not at every start: a command that sends no request
 * (`status`, `export`, `--help`) does not load node:v8.
 */
import { setFlagsFromString } from 'node:v8';

export function tuneEngine(): void {
  setFlagsFromString('--liftoff-only');
}
