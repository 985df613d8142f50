/**
 * The parts of undici the client uses, loaded alone (issue 15): `import 'undici'` evaluates all of
 * it (fetch, WebSocket, caches, mocks, every dispatcher), about a third of a no-op pull's whole
 * process. undici 7 has no `exports` map, so its files are reachable by path; the suite runs every
 * request through these, so a release that moved them fails the tests, not a user.
 */
import { createRequire } from 'node:module';
import type { Dispatcher, EnvHttpProxyAgent as EnvHttpProxyAgentType, Pool as PoolType } from 'undici';

const require = createRequire(import.meta.url);

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof PoolType;

/**
 * The proxy agent, loaded only when a proxy variable applies: from the whole of undici, whose entry
 * point also gives every dispatcher the `connect` a CONNECT tunnel needs.
 */
export function envHttpProxyAgent(): typeof EnvHttpProxyAgentType {
  return (require('undici') as { EnvHttpProxyAgent: typeof EnvHttpProxyAgentType }).EnvHttpProxyAgent;
}

const apiRequest = require('undici/lib/api/api-request.js') as (
  this: Dispatcher,
  opts: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

/** undici's `request(url, { dispatcher, … })` for a dispatcher we always pass. */
export function request(
  url: string | URL,
  opts: Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Dispatcher },
): Promise<Dispatcher.ResponseData> {
  const { dispatcher, ...rest } = opts;
  const u = typeof url === 'string' ? new URL(url) : url;
  return apiRequest.call(dispatcher, { ...rest, origin: u.origin, path: `${u.pathname}${u.search}` });
}
