/**
 * The one place that builds an API client: its request budget from the config's rate, shared by every
 * stream of the command and, through a BudgetStore, by every process with the same key; and the
 * client's own settings. Nobody else calls `new RequestBudget`.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import { RequestBudget } from '../api/budget.js';
import { ApiClient } from '../api/client.js';
import { type ApiConfig, serviceUrl } from '../config/config.js';
import { stateDir } from '../config/env.js';
import type { Clock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { keyFingerprint } from '../core/fingerprint.js';
import { currentClock } from '../core/io.js';
import { type BudgetStore, formatRate, type Rate } from '../core/rate.js';
import { userAgent } from '../core/version.js';
import { errorCode, UsageError } from '../errors.js';
import type { ServiceClaim } from '../store/port.js';
import { BudgetDamaged, BudgetUnusable, SLOTS_FILE, SqliteBudgetSlots } from '../store/sqlite/budget-slots.js';

export interface ClientHooks {
  signal?: AbortSignal | undefined;
  clock?: Clock;
  /** Tests pass a MockAgent. */
  dispatcher?: Dispatcher;
  events?: RunEvents | undefined;
  /** The slots of a PostgreSQL mirror (store/pg/job-store.ts), for a key's digest: shared by every host. Default (or none given back): the user's file. */
  budgetSlots?: ((key: string, timeoutMs: number) => BudgetStore | undefined) | undefined;
}

/**
 * The service a command syncs a mirror with (store/model/service.ts): the base URL as a mirror records
 * it, whether --switch-service records it over another, and what set it, for the refusal's message.
 */
export function serviceClaim(settings: { readonly api: ApiConfig; readonly switchService: boolean }): ServiceClaim {
  return { url: serviceUrl(settings.api.baseUrl), replace: settings.switchService, where: settings.api.baseUrlWhere ?? '--base-url' };
}

/** The budget's key for a service and an API key; the key itself cannot be recovered from it. */
export function budgetKey(baseUrl: string, apiKey: string): string {
  return keyFingerprint('budget', baseUrl, apiKey);
}

/** What kept the slots' file in `dir` from being used, naming the file when the folder is not at fault. */
function slotsProblem(err: unknown, dir: string): string {
  if (err instanceof BudgetUnusable) return err.message;
  const code = errorCode(err) ?? 'error';
  const file = join(dir, SLOTS_FILE);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return `${file} is locked by another program (${code})`;
  if (code.startsWith('SQLITE_')) return `${file} could not be used (${code})`;
  // The file is at fault, not the folder: another user's (after one `sudo` run), or on a read-only mount.
  if (existsSync(file)) return `${file} could not be opened for writing (${code})`;
  return `cannot write ${dir} (${code})`;
}

/**
 * The one warning of a process whose limit is not the one its key's processes keep to: another's is
 * stricter (or, given with another window, neither is: then a budget that keeps both).
 */
export function agreedLimitWarning(own: Rate, agreed: Rate): string {
  return `the request budget keeps to ${formatRate(agreed)}, not ${formatRate(own)} (--rate-limit): another process with this API key was given a stricter limit, and every process with one key keeps to the stricter of their limits (the smallest count in the longest window) while it runs`;
}

/**
 * Builds the command's client. Its budget takes a slot of the key's for each request, in the
 * PostgreSQL mirror (`hooks.budgetSlots`) or in the user's state folder; when that file cannot be
 * used, the budget is this process's alone, with one warning; a damaged one stops the command (its
 * busy slots cannot be known).
 */
export function createClient(config: ApiConfig, hooks: ClientHooks = {}): ApiClient {
  const clock = hooks.clock ?? currentClock();
  const key = budgetKey(config.baseUrl.href, config.apiKey);
  let store: BudgetStore | undefined = hooks.budgetSlots?.(key, config.timeoutMs);
  if (store === undefined) {
    const dir = stateDir();
    try {
      const warn = (text: string) => hooks.events?.warning?.(text);
      store = SqliteBudgetSlots.open(dir, key, { timeoutMs: config.timeoutMs, clock, warn });
    } catch (err) {
      // A damaged file, or a symbolic link planted at its name: refused, not worked around.
      if (err instanceof BudgetDamaged || err instanceof UsageError) throw err;
      hooks.events?.warning?.(`the request budget is not shared with other runs: ${slotsProblem(err, dir)}`);
    }
  }
  const warn = (agreed: Rate) => hooks.events?.warning?.(agreedLimitWarning(config.rate, agreed));
  const budget = new RequestBudget(config.rate, clock, store, warn);
  const { budgetSlots: _, ...options } = hooks;
  return new ApiClient({ ...config, userAgent: userAgent() }, { budget, ...options, clock, onClose: () => store?.close() });
}
