/**
 * `pull --metrics-file <path>`: the metrics `watch --metrics-listen` serves (app/metrics.ts), written
 * after the pass for node_exporter's textfile collector. Written under a temporary name in the same
 * folder (created exclusively, never through a link) and renamed over the path, so the collector
 * reads the previous file or the new one, never half of one; the temporary name starts with a dot
 * and does not end in `.prom`, so the collector never picks it up.
 *
 * The file holds no personal data (counts, stream keys, campaign ids, times), and node_exporter reads
 * it as its own user: it is made as any program's file, 0644 less the umask, or with the mode
 * `--metrics-file-mode` gives. Its counters are the totals the mirror keeps for this host's file
 * (store/model/counters.ts), this run's counts added: a cron pull is a new process each time.
 */

import { type Stats, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { cleanStalePartials, PartialFile } from '../core/fs/partial-file.js';
import { canonicalPath } from '../core/fs/private-file.js';
import { storageError, UsageError } from '../errors.js';
import type { CounterStore, CounterValue } from '../store/port.js';
import { SyncMetrics } from './metrics.js';

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

/** Writes the metrics' Prometheus text at `path` in one step (`mode`: exactly, else the umask's); a failure is a StorageError (74) naming the path. */
export async function writeMetricsFile(path: string, metrics: SyncMetrics, mode?: number): Promise<void> {
  const body = Buffer.from(await metrics.registry.metrics());
  let partial: PartialFile | undefined;
  try {
    cleanStalePartials(path);
    partial = new PartialFile(path, mode ?? 'umask');
    for (let at = 0; at < body.length; ) at += writeSync(partial.fd, body, at);
    partial.commit();
  } catch (err) {
    partial?.discard();
    throw storageError(err, `--metrics-file: cannot write ${path}`);
  }
}

/** A pull's metrics file: this run's metrics, its counters shown as the totals the mirror keeps. */
export class MetricsFile {
  readonly metrics = new SyncMetrics();
  /** What the mirror's counters go by: this host's file (a fleet's hosts each count their own work). */
  readonly scope: string;
  private store: CounterStore | undefined;
  /** The totals as the mirror held them when it was opened. */
  private kept: CounterValue[] = [];

  constructor(
    readonly path: string,
    private readonly mode: number | undefined,
  ) {
    checkMetricsFile(path);
    this.scope = `${hostname()}:${canonicalPath(path)}`;
  }

  /** Reads the totals kept by earlier runs, once the mirror is open; a mirror that cannot be read counts from 0. */
  async open(store: CounterStore): Promise<void> {
    this.store = store;
    this.kept = await store.totals(this.scope).catch(() => []);
  }

  /**
   * Adds this run's counts to the mirror's totals and writes the file with them. When they cannot be
   * kept (a failed write stopped the mirror), the file shows the totals as they were, so that no
   * counter goes back, and the failure is returned for the caller to report; a file that cannot be
   * written throws (74).
   */
  async write(): Promise<Error | undefined> {
    const counts = await this.metrics.counts();
    let totals = this.kept;
    let unkept: Error | undefined;
    if (this.store !== undefined) {
      try {
        totals = await this.store.add(this.scope, counts);
      } catch (err) {
        unkept = err as Error;
      }
    }
    this.metrics.showTotals(totals);
    await writeMetricsFile(this.path, this.metrics, this.mode);
    return unkept;
  }
}
