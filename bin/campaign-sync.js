#!/usr/bin/env node
// Tiny launcher: everything lives in dist/bundle/ (built by `npm install` through the prepare script;
// scripts/bundle.js). With CAMPAIGN_SYNC_DEBUG set, stack traces name src/ files (source maps; they
// cost start time, so only then).
import module from 'node:module';

// Node's printer of process warnings (a library's emitWarning, a deprecation) writes several lines
// with the pid; the CLI prints each as one line of its own (src/ui/process-warnings.ts). It is
// removed before anything can warn, and what arrives is kept until main() takes over. Where there
// is no printer (--no-warnings, NODE_NO_WARNINGS=1) the warnings stay silent.
const warnings = { list: [], enabled: process.listenerCount('warning') > 0, stop: () => {} };
if (warnings.enabled) {
  process.removeAllListeners('warning');
  const keep = (warning) => warnings.list.push(warning);
  process.on('warning', keep);
  warnings.stop = () => process.off('warning', keep);
}
globalThis[Symbol.for('campaign-sync.early-warnings')] = warnings;

// A SIGINT/SIGTERM/SIGHUP that arrives while the CLI loads (before main() installs its handlers,
// ~0.1-0.2 s) is kept and handed to main(), which acts on it as on any other: the first one stops the
// command (watch exits 0, export 130 with its line), a second one exits 130 at once. Without this,
// Node's default action would kill the process with no message and none of our exit codes.
const early = { signals: [], stop: () => {} };
const onEarly = (name) => {
  early.signals.push(name);
  if (early.signals.length > 1) {
    process.stderr.write(`campaign-sync: second ${name}, exiting now\n`);
    process.exit(130);
  }
};
process.on('SIGINT', onEarly).on('SIGTERM', onEarly).on('SIGHUP', onEarly);
early.stop = () => process.off('SIGINT', onEarly).off('SIGTERM', onEarly).off('SIGHUP', onEarly);
globalThis[Symbol.for('campaign-sync.early-signals')] = early;

if (process.env.CAMPAIGN_SYNC_DEBUG) process.setSourceMapsEnabled(true);
// Where Node has it (22.1+), compiled code is cached in a folder of the user's alone, or not at all
// (src/core/compile-cache.ts); Node 20 loads nothing for it.
if (module.enableCompileCache) {
  const { enableCompileCache } = await import('../dist/bundle/compile-cache.js');
  enableCompileCache((dir) => module.enableCompileCache(dir));
}
const { main } = await import('../dist/bundle/main.js');

main(process.argv);
