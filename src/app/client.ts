/**
 * The one place that builds an API client: its request budget from the config's rate, shared by every
 * stream of the command, and the client's own settings. Nobody else calls `new RequestBudget`.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import { RequestBudget } from '../api/budget.js';
import { ApiClient } from '../api/client.js';
import type { ApiConfig } from '../config/config.js';
import { stateDir } from '../config/env.js';
import type { Clock } from '../core/clock.js';
import type { RunEvents } from '../core/events.js';
import { userAgent } from '../core/version.js';
import { errorCode, UsageError } from '../errors.js';
import { BudgetLedger, LEDGER_FILE, LedgerUnusable, ledgerFingerprint } from '../store/budget-ledger.js';

export interface ClientHooks {
  signal?: AbortSignal | undefined;
  clock?: Clock;
  /** Tests pass a MockAgent. */
  dispatcher?: Dispatcher;
  events?: RunEvents | undefined;
}

/** What kept the ledger in `dir` from being used, naming the file when the folder is not at fault. */
function ledgerProblem(err: unknown, dir: string): string {
  if (err instanceof LedgerUnusable) return err.message;
  const code = errorCode(err) ?? 'error';
  const file = join(dir, LEDGER_FILE);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return `${file} is locked by another program (${code})`;
  // A damaged file written in the last second may be another run's new ledger: left for now.
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return `${file} could not be read (${code}); if it is damaged, the next run moves it aside`;
  }
  if (code.startsWith('SQLITE_')) return `${file} could not be used (${code})`;
  // The file is at fault, not the folder: another user's (after one `sudo` run), or on a read-only mount.
  if ((err as { path?: unknown }).path === file && existsSync(file)) return `${file} could not be opened for writing (${code})`;
  return `cannot write ${dir} (${code})`;
}

/**
 * Builds the command's client. Its budget counts the requests other processes make with the same
 * key, earlier or at the same time (store/budget-ledger.ts); when the ledger cannot be opened, the
 * budget is this process's alone, with one warning (a symbolic link there is a UsageError, thrown).
 */
export function createClient(config: ApiConfig, hooks: ClientHooks = {}): ApiClient {
  let ledger: BudgetLedger | undefined;
  const dir = stateDir();
  try {
    const fingerprint = ledgerFingerprint(config.baseUrl.href, config.apiKey);
    const opened = BudgetLedger.open(dir, fingerprint, config.rate.windowMs, hooks.clock?.now() ?? Date.now(), {
      timeoutMs: config.timeoutMs,
      warn: (text) => hooks.events?.warning?.(text),
    });
    ledger = opened.ledger;
    for (const w of opened.warnings) hooks.events?.warning?.(w);
  } catch (err) {
    // A symbolic link planted at the ledger's name: refused, not worked around.
    if (err instanceof UsageError) throw err;
    hooks.events?.warning?.(`the request budget is not shared with other runs: ${ledgerProblem(err, dir)}`);
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
