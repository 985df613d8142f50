/** The counters `pull --metrics-file` keeps between runs, in the SQLite mirror (store/model/counters.ts). */
import { storageError } from '../../errors.js';
import { type CounterValue, labelsKey, labelsOf } from '../model/counters.js';
import type { CounterStore } from '../port.js';
import type { Db } from './db.js';

export class SqliteCounters implements CounterStore {
  constructor(
    private readonly db: Db,
    private readonly path: string,
    /** Commits the sink's open group first: this transaction must not join it (nor outlive its failure). */
    private readonly settle: () => Promise<void>,
  ) {}

  async totals(scope: string): Promise<CounterValue[]> {
    const rows = this.db
      .prepare('SELECT name, labels, value FROM metric_counters WHERE scope = ? ORDER BY name, labels')
      .all(scope) as Array<{
      name: string;
      labels: string;
      value: number;
    }>;
    return rows.map((r) => ({ name: r.name, labels: labelsOf(r.labels), value: r.value }));
  }

  async add(scope: string, counts: readonly CounterValue[]): Promise<CounterValue[]> {
    await this.settle();
    try {
      const add = this.db.prepare(
        'INSERT INTO metric_counters (scope, name, labels, value) VALUES (?, ?, ?, ?) ON CONFLICT (scope, name, labels) DO UPDATE SET value = value + excluded.value',
      );
      this.db.transaction(() => {
        for (const c of counts) if (c.value > 0) add.run(scope, c.name, labelsKey(c.labels), c.value);
      })();
    } catch (err) {
      throw storageError(err, `cannot keep the metrics' counters in ${this.path}`);
    }
    return this.totals(scope);
  }
}
