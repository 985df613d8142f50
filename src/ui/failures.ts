/**
 * One line per failed stream, for stderr: what `--quiet` still prints, so that cron mails a failed
 * sync (PRODUCT.md §1). `<campaign> (<endpoint>[ <report type>]): <error>`.
 */
import type { PassResult, StreamResult } from '../sync/pass.js';

/** Control characters would split or repaint the line: written as \u escapes instead. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function failureLine(s: StreamResult): string {
  const where = s.id.endpoint === 'role' ? `role ${s.id.reportType}` : 'session';
  return oneLine(`${s.campaignName} (${where}): ${s.error}`);
}

/** The failed streams of a pass, one line each (without the `error:` prefix Output adds). */
export function failureLines(result: PassResult): string[] {
  return result.streams.filter((s) => s.status === 'failed').map(failureLine);
}
