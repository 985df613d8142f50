import { resolve } from 'node:path';
import { SyncJob } from '../app/sync-job.js';
import { apiSchema, demoSchema, parseSettings } from '../config/schema.js';
import { exitCodeForPass } from '../errors.js';
import { startSimulator } from '../simulator/server.js';
import { commandEvents } from '../ui/events.js';
import { Output, type OutputFlags } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { passDocument, passTable } from '../ui/summary.js';
import { formatCount } from '../ui/table.js';

export interface DemoFlags extends OutputFlags {
  db?: string;
  seed?: string;
  campaigns?: string;
  records?: string;
}

/**
 * `campaign-sync demo`: the simulator in-process on a free loopback port, a full pull into
 * ./campaign-sync-demo.db, the summary, and what to try next. No key, no network.
 */
export async function demo(flags: DemoFlags, signal: AbortSignal): Promise<number> {
  const out = new Output(flags);
  const { db, seed, campaigns, records } = parseSettings(demoSchema, flags);
  const api = parseSettings(apiSchema, {});
  // No rate limit on either side: the demo should show the mirror, not a minute of waiting.
  const sim = await startSimulator({ seed, campaigns, records, unknownTypeCampaigns: 0 });
  try {
    out.info(`simulator started on ${sim.url} (${campaigns} campaigns, ${formatCount(records)} results each, seed ${seed})`);
    const progress = await startProgress(out, 'pulling');
    const session = await SyncJob.open(
      { db },
      signal,
      { events: commandEvents(out, progress) },
      {
        baseUrl: new URL(sim.url),
        apiKey: sim.apiKey,
        rate: { count: 100_000, windowMs: 1000 },
        timeoutMs: api.timeout,
        maxRetries: api.maxRetries,
        maxRetryWaitMs: api.maxRetryWait,
      },
    );
    let code: number;
    try {
      const result = await session.pass();
      progress.stop();
      code = exitCodeForPass(result);
      out.document({ ...passDocument(result), db: resolve(db) });
      out.print(passTable(result, out.tableStyle));
    } finally {
      progress.stop();
      await session.close();
    }
    out.print(`
The mirror is in ${resolve(db)}. Try next:
  npx campaign-sync status --db ${db}
  npx campaign-sync export --db ${db} --table session-results --format csv -o session-results.csv
  sqlite3 ${db} "SELECT scenario_type, count(*), round(avg(score), 2) FROM session_results GROUP BY 1"
  npx campaign-sync demo --db ${db}        # again: an incremental pull finds nothing new
  npx campaign-sync simulate --port 8080   # a simulator to rehearse your own pipeline against`);
    return code;
  } finally {
    await sim.close();
  }
}
