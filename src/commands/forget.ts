import { mirrorOf } from '../app/factory.js';
import type { ForgetSettings } from '../config/command-settings.js';
import { currentClock } from '../core/io.js';
import { formatDuration } from '../core/rate.js';
import { UsageError } from '../errors.js';
import { showText } from '../ui/escape.js';
import { erasedLine, olderErasedLine } from '../ui/forget.js';
import { Output } from '../ui/output.js';

/**
 * `campaign-sync forget --user <email or id>`: erases one candidate from the database and from the
 * NDJSON files it wrote (store/sqlite/erase-rows.ts). A user found nowhere is a usage error (exit 2): a typo
 * must not read as "erased". An erasure an earlier forget left unfinished (killed, or stopped by a
 * full disk) is finished first, whoever is named (store/sqlite/erasure.ts).
 * `forget --older-than <duration>`: erases every result dated before now minus the duration
 * (store/model/erase-rule.ts), the same way; none there is no error.
 */
export async function forget(settings: ForgetSettings): Promise<number> {
  const out = new Output(settings);
  if (settings.olderThan !== undefined) return forgetOlder(settings, settings.olderThan, out);
  const user = settings.user?.trim() ?? '';
  if (user === '') throw new UsageError('forget: give the candidate with --user <email or id>, or an age with --older-than <duration>');
  // Before anything is opened: said even when the database cannot be reached.
  const mirror = await mirrorOf(settings, (text) => out.warn(text)).eraser();
  try {
    const { rows, files, copies, earlier, found } = await mirror.erase(user);
    // Where no erasure can be left unfinished (PostgreSQL), the document has no such field.
    const finished = earlier === undefined ? {} : { finished_earlier: earlier };
    if (!found && earlier) {
      out.document({ user, removed: rows, copies, files, finished_earlier: true });
      out.print(
        `Finished the erasure an earlier forget left unfinished in ${mirror.name} (its rows were already deleted); no other record of ${showText(user)} was there.`,
      );
      return 0;
    }
    if (!found) {
      throw new UsageError(
        `forget: no record of the candidate "${showText(user)}" in ${mirror.searched} (match: user id, or e-mail ignoring case, at the top of a record or nested in it)`,
      );
    }
    out.document({ user, removed: rows, copies, files, ...finished });
    out.print(
      `${erasedLine(user, rows, mirror.name, files)}${earlier ? ' Also finished the erasure an earlier forget left unfinished there.' : ''}`,
    );
    return 0;
  } finally {
    await mirror.close();
  }
}

async function forgetOlder(settings: ForgetSettings, olderThan: number, out: Output): Promise<number> {
  const mirror = await mirrorOf(settings, (text) => out.warn(text)).eraser();
  try {
    // The run's clock (core/io.ts), as the retention's: one set off in a test cuts where it says.
    const before = currentClock().now() - olderThan;
    const cut = new Date(before).toISOString();
    const { rows, files, copies, earlier } = await mirror.eraseOlderThan(before);
    const finished = earlier === undefined ? {} : { finished_earlier: earlier };
    out.document({ older_than: formatDuration(olderThan), before: cut, removed: rows, copies, files, ...finished });
    out.print(
      `${olderErasedLine(cut, rows, mirror.name, files, copies)}${earlier ? ' Also finished the erasure an earlier forget left unfinished there.' : ''}`,
    );
    return 0;
  } finally {
    await mirror.close();
  }
}
