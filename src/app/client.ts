/**
 * The one place that builds an API client: its request budget from the config's rate, shared by every
 * stream of the command, and the client's own settings. Nobody else calls `new RequestBudget`.
 */
import type { Dispatcher } from 'undici';
import { RequestBudget } from '../api/budget.js';
import { ApiClient } from '../api/client.js';
import type { ApiConfig } from '../config/config.js';
import { stateDir } from '../config/env.js';
import type { Clock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { userAgent } from '../core/version.js';
import { BudgetLedger, LedgerUnusable, ledgerFingerprint } from '../store/budget-ledger.js';

export interface ClientHooks {
  signal?: AbortSignal | undefined;
  clock?: Clock;
  /** Tests pass a MockAgent. */
  dispatcher?: Dispatcher;
  events?: RunEvents | undefined;
}

/**
 * The budget starts from the requests earlier processes made with the same key (store/budget-ledger.ts);
 * when the ledger cannot be opened, the budget is this process's alone, with one warning.
 */
export function createClient(config: ApiConfig, hooks: ClientHooks = {}): ApiClient {
  let ledger: BudgetLedger | undefined;
  const dir = stateDir();
  try {
    const fingerprint = ledgerFingerprint(config.baseUrl.href, config.apiKey);
    const opened = BudgetLedger.open(dir, fingerprint, config.rate.windowMs, hooks.clock?.now() ?? Date.now());
    ledger = opened.ledger;
    for (const w of opened.warnings) hooks.events?.warning?.(w);
  } catch (err) {
    const why = err instanceof LedgerUnusable ? err.message : `cannot write ${dir} (${(err as { code?: string }).code ?? 'error'})`;
    hooks.events?.warning?.(`the request budget is not shared with other runs: ${why}`);
  }
  const budget = new RequestBudget(config.rate, hooks.clock, ledger);
  return new ApiClient(
    { ...config, userAgent: userAgent() },
    {
      budget,
      ...hooks,
      onClose: () => {
        ledger?.close();
        ledger = undefined;
      },
    },
  );
}
