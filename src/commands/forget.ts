import { dbChoice } from '../config/config.js';
import { type MirrorSettings, resolveSettings } from '../config/settings.js';
import { currentWaits } from '../core/io.js';
import { waitWords } from '../core/waits.js';
import { StorageError, storageError, UsageError } from '../errors.js';
import { openDatabase } from '../store/db.js';
import { eraseCandidate } from '../store/erasure.js';
import { RunLock } from '../store/lock.js';
import { dbWarnings, isPgUrl } from '../store/pg/url.js';
import { showText } from '../ui/escape.js';
import { erasedLine } from '../ui/forget.js';
import { Output, type OutputFlags } from '../ui/output.js';

export interface ForgetFlags extends OutputFlags {
  db?: string;
  pgSchema?: string;
  user?: string;
}

/**
 * `campaign-sync forget --user <email or id>`: erases one candidate from the database and from the
 * NDJSON files it wrote (store/erase.ts). A user found nowhere is a usage error (exit 2): a typo
 * must not read as "erased". An erasure an earlier forget left unfinished (killed, or stopped by a
 * full disk) is finished first, whoever is named (store/erasure.ts).
 */
export async function forget(flags: ForgetFlags, settings: MirrorSettings = resolveSettings('forget', flags)): Promise<number> {
  const out = new Output(flags);
  const user = flags.user?.trim() ?? '';
  if (user === '') throw new UsageError('forget: give the candidate with --user <email or id>');
  const chosen = dbChoice(settings.db, settings.sourceOf('db'));
  // Before anything is opened: said even when the database cannot be reached.
  for (const w of dbWarnings(chosen)) out.warn(w);
  const { path: dbPath, where } = chosen;
  if (isPgUrl(dbPath)) return (await import('./forget-pg.js')).forgetInPg({ url: dbPath, where }, settings.pgSchema, user, out);
  const db = openDatabase(dbPath, { mustExist: true });
  let lock: RunLock | undefined;
  try {
    // A pull running meanwhile could write the user's records back: take the lock.
    lock = RunLock.acquire(dbPath);
    const { rows, files, earlier, found, done } = eraseCandidate(db, user);
    if (!done) {
      throw new StorageError(
        `forget: cannot finish erasing in ${dbPath}: another process has it open (a reader's transaction or a writer) and did not let go within ${waitWords(currentWaits().sqliteBusyMs)}, so the old pages could not be overwritten; the rows are deleted but the erasure is not finished: close that process and run \`campaign-sync forget\` again (any --user) to finish it`,
        { code: 'SQLITE_BUSY' },
      );
    }
    if (!found && earlier) {
      out.document({ user, removed: rows, files, finished_earlier: true });
      out.print(
        `Finished the erasure an earlier forget left unfinished in ${dbPath} (its rows were already deleted); no other record of ${showText(user)} was there.`,
      );
      return 0;
    }
    if (!found) {
      throw new UsageError(
        `forget: no record of the candidate "${showText(user)}" in ${dbPath} or the NDJSON files it wrote (match: user id, or e-mail ignoring case, at the top of a record or nested in it)`,
      );
    }
    out.document({ user, removed: rows, files, finished_earlier: earlier });
    out.print(
      `${erasedLine(user, rows, dbPath, files)}${earlier ? ' Also finished the erasure an earlier forget left unfinished there.' : ''}`,
    );
    return 0;
  } catch (err) {
    // A full disk during the rewrite is a storage failure (exit 74), named, never "internal error".
    throw storageError(err, `forget: cannot write ${dbPath}`);
  } finally {
    lock?.release();
    db.close();
  }
}
