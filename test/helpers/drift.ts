import { expect } from 'vitest';

/** A change of the service's shape, as `status --json` lists it under `drift`. */
export interface DriftChange {
  stream: string;
  change: string;
  kind: string;
  value: string;
  record_id: string;
}

/** The drift that a `status --json` run reports; the run must have succeeded with nothing on stderr. */
export function driftOf(r: { code: number | null; stdout: string; stderr: string }): DriftChange[] {
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { drift: DriftChange[] }).drift;
}
