/**
 * `pull --metrics-file <path>`: the metrics `watch --metrics-listen` serves (app/metrics.ts), written
 * after the pass for node_exporter's textfile collector. Written under a private temporary name in the
 * same folder (created exclusively, 0600, never through a link) and renamed over the path, so the
 * collector reads the previous file or the new one, never half of one; the temporary name starts
 * with a dot and does not end in `.prom`, so the collector never picks it up.
 */
import { type Stats, statSync, writeSync } from 'node:fs';
import { cleanStalePartials, PartialFile } from '../core/fs/partial-file.js';
import { storageError, UsageError } from '../errors.js';
import type { SyncMetrics } from './metrics.js';

/** Checked before the pass: a folder (or a link to one) where the file should go is a bad flag value. */
export function checkMetricsFile(path: string): void {
  if (path === '') throw new UsageError('--metrics-file: the file name is empty');
  let stat: Stats | undefined;
  try {
    stat = statSync(path);
  } catch {
    // absent (the usual case): writing reports a missing folder
  }
  if (stat !== undefined && !stat.isFile())
    throw new UsageError(`--metrics-file ${path}: is not a regular file; give a file name (e.g. campaign_sync.prom)`);
}

/** Writes the metrics' Prometheus text at `path` in one step; a failure is a StorageError (74) naming the path. */
export async function writeMetricsFile(path: string, metrics: SyncMetrics): Promise<void> {
  const body = Buffer.from(await metrics.registry.metrics());
  let partial: PartialFile | undefined;
  try {
    cleanStalePartials(path);
    partial = new PartialFile(path);
    for (let at = 0; at < body.length; ) at += writeSync(partial.fd, body, at);
    partial.commit();
  } catch (err) {
    partial?.discard();
    throw storageError(err, `--metrics-file: cannot write ${path}`);
  }
}
