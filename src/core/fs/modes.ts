/**
 * How a mirror's new files and folders are made (`--file-mode`): readable by their owner alone, or by
 * the owner's group too, for analysts who read a mirror a service user writes. Only creation follows
 * it: an existing file or folder keeps the mode its owner gave it.
 */

/** `--file-mode`'s values (config/defaults.ts CHOICES.fileMode lists them for the flag). */
export type FileModeChoice = 'private' | 'group';

/** The modes of a new file and of a new folder. */
export interface NewModes {
  readonly file: number;
  readonly folder: number;
}

/** Nobody but the owner reads candidates' e-mails unless the operator asks for a group of readers. */
export const NEW_MODES: Readonly<Record<FileModeChoice, NewModes>> = {
  private: { file: 0o600, folder: 0o700 },
  group: { file: 0o640, folder: 0o750 },
};
