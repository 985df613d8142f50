import { hostname } from 'node:os';
import type { NotifyTestSettings } from '../config/command-settings.js';
import { CampaignSyncError, ExitCode, UsageError } from '../errors.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';

/**
 * `campaign-sync notify-test --notify <url>`: one test document to the webhook, signed as pull and
 * watch sign theirs, to check the URL, the secret and the receiver before a stream fails for real.
 * Delivered: exit 0. Refused by the receiver (a 4xx other than 408 and 429: a wrong URL, a token or
 * a signature it does not accept): exit 2, the set-up is at fault. Not reached, timed out or a 5xx
 * after the retries: exit 5, as for a service that cannot be reached.
 */
export async function notifyTest(settings: NotifyTestSettings): Promise<number> {
  const out = new Output(settings);
  for (const w of settings.warnings) out.warn(w);
  const { Notifier } = await import('../app/notify.js');
  const notifier = new Notifier(settings.notify, { secret: settings.notifySecret });
  const origin = settings.notify.origin;
  const signed = settings.notifySecret !== undefined;
  // Retries of a receiver that fails wait seconds: shown on a terminal.
  const progress = await startProgress(out, `sending a test notification to ${origin}`);
  try {
    const delivery = await notifier.sendTest(hostname()).finally(() => progress.stop());
    if (delivery.problem === undefined) {
      // A failure's document is main.ts's, `{ "error", "exit_code" }`, as for every command.
      out.document({ delivered: true, to: origin, status: delivery.status ?? null, signed });
      out.print(`Sent a test notification to ${origin} (HTTP ${delivery.status})${signed ? ', signed' : ', unsigned: no secret given'}.`);
      return ExitCode.ok;
    }
    const status = delivery.status;
    if (status !== undefined && status >= 300 && status < 500 && status !== 408 && status !== 429) {
      throw new UsageError(
        `notify-test: ${origin} refused the test notification (${delivery.problem}): check the --notify URL${signed ? ' and that the receiver has the same secret' : ''}`,
      );
    }
    throw new CampaignSyncError(`notify-test: the test notification did not reach ${origin} (${delivery.problem})`, ExitCode.unavailable, {
      kind: 'unavailable',
    });
  } finally {
    await notifier.close();
  }
}
