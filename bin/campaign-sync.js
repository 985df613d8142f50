#!/usr/bin/env node
// Tiny launcher: everything lives in dist/bundle/ (built by `npm install` through the prepare script;
// scripts/bundle.js). With CAMPAIGN_SYNC_DEBUG set, stack traces name src/ files (source maps; they
// cost start time, so only then). On Node 22+, V8's compiled code is cached between runs.
import module from 'node:module';

if (process.env.CAMPAIGN_SYNC_DEBUG) process.setSourceMapsEnabled(true);
module.enableCompileCache?.();
const { main } = await import('../dist/bundle/main.js');

main(process.argv);
