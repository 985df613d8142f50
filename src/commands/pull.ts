import { type SyncFlags, SyncSession } from '../sync/session.js';
import { failureLines } from '../ui/failures.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { passDocument, passTable } from '../ui/summary.js';
import { formatCount, formatMs } from '../ui/table.js';

/** `campaign-sync pull`: one pass, a summary, and the exit code of PRODUCT.md §3. */
export async function pull(flags: SyncFlags, signal: AbortSignal): Promise<number> {
  const out = new Output(flags);
  const progress = await startProgress(out, 'listing campaigns');
  const session = SyncSession.open(flags, signal, {
    warn: (t) => out.warn(t),
    onRetry: (err, delay) => out.info(`retrying in ${formatMs(delay)}: ${err.message}`),
    onProgress: (p) =>
      progress.update(`${p.streamsDone}/${p.streams} streams, ${formatCount(p.records)} records, ${formatCount(p.requests)} requests`),
  });
  for (const w of session.client.config.warnings ?? []) out.warn(w);
  try {
    const result = await session.pass();
    progress.stop();
    out.document(passDocument(result));
    out.print(passTable(result));
    // The table lists failures; without it (--quiet, --json) each failed stream still gets one line.
    if (out.quiet || out.json) for (const line of failureLines(result)) out.error(line);
    return result.exitCode;
  } finally {
    progress.stop();
    await session.close();
  }
}
