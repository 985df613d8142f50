import type { ChildProcess } from 'node:child_process';

/** Resolves with the child's peak RSS in MiB once it exits with code 0; rejects otherwise. */
export function peakRssMb(child: ChildProcess, everyMs?: number): Promise<number>;
