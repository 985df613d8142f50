/**
 * The parts of undici the client uses, loaded alone: `import 'undici'` evaluates all of
 * it (fetch, WebSocket, caches, mocks, every dispatcher), about a third of a no-op pull's whole
 * process. Requests go through the Pool's own `dispatch` (api/body.ts), not undici's `request`. undici 7 has no `exports` map, so its files are reachable by path; the suite runs every
 * request through these, so a release that moved them fails the tests, not a user.
 */
import { createRequire } from 'node:module';
import type { EnvHttpProxyAgent as EnvHttpProxyAgentType, Pool as PoolType } from 'undici';
import { tuneEngine } from './engine.js';

const require = createRequire(import.meta.url);

// Before undici's parser (WebAssembly) is compiled, at its first connection.
tuneEngine();

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof PoolType;

/**
 * The proxy agent, loaded only when a proxy variable applies: from the whole of undici, whose entry
 * point also gives every dispatcher the `connect` a CONNECT tunnel needs.
 */
export function envHttpProxyAgent(): typeof EnvHttpProxyAgentType {
  return (require('undici') as { EnvHttpProxyAgent: typeof EnvHttpProxyAgentType }).EnvHttpProxyAgent;
}
