/**
 * One line per failed stream, for stderr: what `--quiet` still prints, so that cron mails a failed
 * sync (PRODUCT.md §1). `<campaign> (<endpoint>[ <report type>]): <error>`.
 */
import type { PassResult, StreamResult } from '../sync/pass.js';
import { showText } from './escape.js';

function failureLine(s: StreamResult): string {
  const where = s.id.endpoint === 'role' ? `role ${s.id.reportType}` : 'session';
  return showText(`${s.campaignName} (${where}): ${s.error}`);
}

/** The failed streams of a pass, one line each (without the `error:` prefix Output adds). */
export function failureLines(result: PassResult): string[] {
  return result.streams.filter((s) => s.status === 'failed').map(failureLine);
}
