import { mirrorOf } from '../app/factory.js';
import type { ForgetSettings } from '../config/command-settings.js';
import { currentClock } from '../core/io.js';
import { formatDuration } from '../core/rate.js';
import { UsageError } from '../errors.js';
import { canAsk, confirm } from '../ui/confirm.js';
import { showText } from '../ui/escape.js';
import { erasedLine, nothingCounted, olderCountLines, olderErasedLine } from '../ui/forget.js';
import { Output } from '../ui/output.js';

/**
 * `campaign-sync forget --user <email or id>`: erases one candidate from the database and from the
 * NDJSON files it wrote (store/sqlite/erase-rows.ts). A user found nowhere is a usage error (exit 2): a typo
 * must not read as "erased". An erasure an earlier forget left unfinished (killed, or stopped by a
 * full disk) is finished first, whoever is named (store/sqlite/erasure.ts).
 * `forget --older-than <duration>`: erases every result dated before now minus the duration
 * (store/model/erase-rule.ts), the same way; none there is no error. It shows what it would erase
 * and asks on a terminal, needs --yes elsewhere, and with --dry-run only counts. A profile's
 * `retention` applied by pull and watch is configuration, and asks nothing (store/sqlite/job-store.ts).
 */
export async function forget(settings: ForgetSettings, signal?: AbortSignal): Promise<number> {
  const out = new Output(settings);
  if (settings.olderThan !== undefined) return forgetOlder(settings, settings.olderThan, out, signal);
  if (settings.dryRun)
    throw new UsageError('forget: --dry-run goes with --older-than (forget --user erases one candidate, and says what it erased)');
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

async function forgetOlder(settings: ForgetSettings, olderThan: number, out: Output, signal?: AbortSignal): Promise<number> {
  const age = formatDuration(olderThan);
  // A typo (1d for 365d) would wipe the mirror, and its checkpoints stay, so no pull brings the
  // results back: a person answers a question with the counts in front of them; a script says
  // --yes. Decided before anything is opened, so a cron line without --yes fails on its first run,
  // not on the first day something is old enough.
  const ask = !settings.dryRun && !settings.yes;
  if (ask && !canAsk(out)) {
    throw new UsageError(
      `forget --older-than ${age} erases every result dated before now minus ${age}, and the checkpoints stay, so no pull brings them back: where no one can be asked (no terminal, or --json, --quiet, CI), add --yes; --dry-run shows what it would erase`,
    );
  }
  const mirror = await mirrorOf(settings, (text) => out.warn(text)).eraser();
  try {
    // The mirror's clock, as the retention's: the server's on PostgreSQL, the run's (core/io.ts) on a
    // SQLite file, so one set off in a test cuts where it says.
    const before = (await mirror.now()) - olderThan;
    const cut = new Date(before).toISOString();
    if (settings.dryRun || ask) {
      // Counted under the hold the erasure takes (store/port.ts countOlderThan): what is shown is what goes.
      const count = await mirror.countOlderThan(before);
      const finished = count.earlier === undefined ? {} : { finishes_earlier: count.earlier };
      if (settings.dryRun) {
        out.document({
          dry_run: true,
          older_than: age,
          before: cut,
          removed: count.rows,
          copies: count.copies,
          files: count.files,
          ...finished,
        });
        out.print([...olderCountLines(cut, count, mirror.name), 'Nothing was erased (--dry-run).'].join('\n'));
        return 0;
      }
      // Nothing to lose, nothing to ask: the erasure below only finishes an earlier one, if any.
      if (!nothingCounted(count)) {
        for (const line of olderCountLines(cut, count, mirror.name)) out.info(line);
        out.info('The checkpoints stay: a pull does not bring these back.');
        if (!(await confirm(out, 'Erase them? This cannot be undone.', 'nothing was erased', signal))) {
          out.print('Nothing was erased.');
          return 0;
        }
      }
    }
    const { rows, files, copies, earlier } = await mirror.eraseOlderThan(before);
    const finished = earlier === undefined ? {} : { finished_earlier: earlier };
    out.document({ older_than: age, before: cut, removed: rows, copies, files, ...finished });
    out.print(
      `${olderErasedLine(cut, rows, mirror.name, files, copies)}${earlier ? ' Also finished the erasure an earlier forget left unfinished there.' : ''}`,
    );
    return 0;
  } finally {
    await mirror.close();
  }
}
