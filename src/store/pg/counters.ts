/** The counters `pull --metrics-file` keeps between runs, in the PostgreSQL mirror (store/model/counters.ts). */
import { type CounterValue, labelsKey, labelsOf } from '../model/counters.js';
import type { CounterStore } from '../port.js';
import type { PgDatabase } from './database.js';

const ADD =
  'INSERT INTO metric_counters (scope, name, labels, value) VALUES ($1, $2, $3, $4) ON CONFLICT (scope, name, labels) DO UPDATE SET value = metric_counters.value + excluded.value';

export class PgCounters implements CounterStore {
  constructor(
    private readonly db: PgDatabase,
    /** Waits for the sink's pages: the counts are of a pass whose writes are committed. */
    private readonly settle: () => Promise<void>,
  ) {}

  async totals(scope: string): Promise<CounterValue[]> {
    const r = await this.db.query<{ name: string; labels: string; value: number }>(
      'SELECT name, labels, value FROM metric_counters WHERE scope = $1 ORDER BY name, labels',
      [scope],
    );
    return r.rows.map((row) => ({ name: row.name, labels: labelsOf(row.labels), value: Number(row.value) }));
  }

  async add(scope: string, counts: readonly CounterValue[]): Promise<CounterValue[]> {
    await this.settle();
    // Workers of one host ending together add theirs in turn: an upsert per row, one transaction.
    await this.db.transaction(async (client) => {
      for (const c of counts) if (c.value > 0) await client.query(ADD, [scope, c.name, labelsKey(c.labels), c.value]);
    }, "cannot keep the metrics' counters in");
    return this.totals(scope);
  }
}
