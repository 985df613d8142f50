/**
 * The counters of `pull --metrics-file`, kept in the mirror between runs. A cron pull is a new process
 * each time: counters that started again at every run gave Prometheus a flat line (`increase()` 0),
 * and no alert on a `*_total` could fire. Each run adds what it counted to the totals of its scope
 * (one host's one metrics file) and shows the sums.
 */

/** One counter's value for one set of labels. */
export interface CounterValue {
  /** The metric's name: `campaign_sync_passes_total`. */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A set of labels as one key: its pairs sorted by name, as JSON (one set is one row whatever its order). */
export function labelsKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The labels a key holds (labelsKey's inverse); none for a key that is not one. */
export function labelsOf(key: string): Record<string, string> {
  try {
    const pairs = JSON.parse(key) as unknown;
    if (!Array.isArray(pairs)) return {};
    return Object.fromEntries(
      pairs.filter((p): p is [string, string] => Array.isArray(p) && p.length === 2).map(([k, v]) => [k, String(v)]),
    );
  } catch {
    return {};
  }
}
