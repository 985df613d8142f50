/**
 * The one place that builds an API client: its request budget from the config's rate, shared by every
 * stream of the command, and the client's own settings. Nobody else calls `new RequestBudget`.
 */
import type { Dispatcher } from 'undici';
import { RequestBudget } from '../api/budget.js';
import { ApiClient } from '../api/client.js';
import type { ApiConfig } from '../config/config.js';
import type { Clock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { userAgent } from '../core/version.js';

export interface ClientHooks {
  signal?: AbortSignal | undefined;
  clock?: Clock;
  /** Tests pass a MockAgent. */
  dispatcher?: Dispatcher;
  events?: RunEvents | undefined;
}

export function createClient(config: ApiConfig, hooks: ClientHooks = {}): ApiClient {
  const budget = new RequestBudget(config.rate, hooks.clock);
  return new ApiClient({ ...config, userAgent: userAgent() }, { budget, ...hooks });
}
