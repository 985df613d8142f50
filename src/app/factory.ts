/**
 * The factory of a command's mirror: the backend --db names (decided with the settings,
 * config/config.ts dbKindOf) is opened here and only here (store/sqlite/ or store/pg/, each
 * implementing store/port.ts); commands get every part of a mirror from it. The PostgreSQL backend
 * (and `pg` with it) is loaded only for a postgres:// --db, so a SQLite command's start stays light.
 */

import type { MirrorSettings } from '../config/command-settings.js';
import { NEW_MODES } from '../core/fs/modes.js';
import type {
  CheckpointAdmin,
  EraseMirror,
  ExportSource,
  JobStore,
  MirrorBackend,
  MirrorReader,
  MirrorTarget,
  QuarantineAdmin,
  ServiceClaim,
  StoreChoice,
  VersionReader,
} from '../store/port.js';

/** The mirror a command's settings name, and what it can open of it. */
export interface Mirror {
  readonly target: MirrorTarget;
  /** The backend --db names: a SQLite file, or a PostgreSQL team mirror (a postgres:// URL). */
  readonly kind: 'sqlite' | 'pg';
  /** Locked for a pull or watch, with its sink and checkpoints. */
  jobStore(c: Omit<StoreChoice, 'target'>): Promise<JobStore>;
  /** For `status`: an existing mirror, read; an empty file has no streams if `emptyHasNoStreams`. */
  reader(opts?: { emptyHasNoStreams?: boolean }): Promise<MirrorReader>;
  /** For `reset`: an existing mirror, under the lock. */
  checkpointAdmin(): Promise<CheckpointAdmin>;
  /** For `forget`: an existing mirror, under the lock. */
  eraser(): Promise<EraseMirror>;
  /** For `history` and `export --as-of`: an existing mirror's versions of results, read. */
  versions(): Promise<VersionReader>;
  /** For `quarantine`: an existing mirror's quarantined records. */
  quarantine(): Promise<QuarantineAdmin>;
  /** The campaigns' list upserted, as a pull does, once the service is claimed (a mirror of another: UsageError). */
  storeCampaigns(list: Array<Record<string, unknown>>, lister: string, service: ServiceClaim): Promise<void>;
  /** For `export`: an existing mirror, read (`forChanges`: --since-last, which remembers the consumer's place). */
  exportSource(opts: { forChanges: boolean }): Promise<ExportSource>;
  /** The local files that hold the mirror, by their real paths (none for PostgreSQL): no export writes over them. */
  ownFiles(): Promise<string[]>;
}

/**
 * The mirror of `settings` (--db, the backend it names and --pg-schema, resolved and checked with the
 * settings). `warn` gets the settings' warnings about where a PostgreSQL password is kept before
 * anything is opened.
 */
export function mirrorOf(settings: MirrorSettings, warn?: (text: string) => void): Mirror {
  for (const w of settings.dbWarnings) warn?.(w);
  const target: MirrorTarget = {
    path: settings.db,
    where: settings.sourceOf('db').name,
    pgSchema: settings.pgSchema,
    modes: NEW_MODES[settings.fileMode],
  };
  const kind = settings.dbKind;
  const backend = async (): Promise<MirrorBackend> =>
    kind === 'pg' ? (await import('../store/pg/backend.js')).pgBackend : (await import('../store/sqlite/backend.js')).sqliteBackend;
  return {
    target,
    kind,
    jobStore: async (c) => (await backend()).openJobStore({ ...c, target }),
    reader: async (opts = {}) => (await backend()).openReader(target, opts),
    checkpointAdmin: async () => (await backend()).openCheckpointAdmin(target),
    eraser: async () => (await backend()).openEraser(target),
    versions: async () => (await backend()).openVersions(target),
    quarantine: async () => (await backend()).openQuarantine(target),
    storeCampaigns: async (list, lister, service) => (await backend()).storeCampaigns(target, list, lister, service),
    exportSource: async (opts) => (await backend()).openExport(target, opts),
    ownFiles: async () => (await backend()).ownFiles(target),
  };
}
