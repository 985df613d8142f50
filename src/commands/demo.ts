import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Mirror, mirrorOf } from '../app/factory.js';
import { SyncJob } from '../app/sync-job.js';
import type { DemoSettings } from '../config/command-settings.js';
import { exitCodeForPass, UsageError } from '../errors.js';
import { startSimulator } from '../simulator/server.js';
import { showText } from '../ui/escape.js';
import { commandEvents } from '../ui/events.js';
import { Output } from '../ui/output.js';
import { startProgress } from '../ui/progress.js';
import { commandName, shellWord } from '../ui/shell.js';
import { passDocument, passTable } from '../ui/summary.js';
import { formatCount } from '../ui/table.js';

/**
 * The campaigns a database already holds (listed or with a stream) that the demo's simulator does not
 * serve: a mirror of the real service, or a demo of another seed. The demo writes made-up records,
 * so it refuses such a --db rather than mixing them in (status would watch them, exports carry them).
 */
async function foreignCampaigns(mirror: Mirror, served: Set<string>): Promise<number> {
  if (!existsSync(mirror.target.path)) return 0;
  // An empty file holds no campaigns: the pull makes it a new database, as `pull` does.
  const d = await mirror.reader({ emptyHasNoStreams: true });
  try {
    const ids = new Set([...(await d.campaignNames()).keys(), ...(await d.streams()).map((s) => s.campaign_id)]);
    return [...ids].filter((id) => !served.has(id)).length;
  } finally {
    await d.close();
  }
}

/**
 * `campaign-sync demo`: the simulator in-process on a free loopback port, a full pull into
 * ./campaign-sync-demo.db, the summary, and what to try next. No key, no network.
 */
export async function demo(settings: DemoSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const { db, seed, campaigns, records } = settings;
  const mirror = mirrorOf(settings);
  if (mirror.kind === 'pg')
    throw new UsageError('--db: the demo writes made-up records into a SQLite file, never into a PostgreSQL mirror');
  // No rate limit on either side: the demo should show the mirror, not a minute of waiting.
  const sim = await startSimulator({ seed, campaigns, records, unknownTypeCampaigns: 0 });
  try {
    const foreign = await foreignCampaigns(mirror, new Set(sim.data.campaigns.map((c) => c.id)));
    if (foreign > 0) {
      throw new UsageError(
        `--db ${db} holds ${formatCount(foreign)} campaign${foreign === 1 ? '' : 's'} this demo does not serve (a mirror of the real service, or a demo with another --seed or --campaigns); the demo writes made-up records: give it another --db (default ./campaign-sync-demo.db)`,
      );
    }
    out.info(`simulator started on ${sim.url} (${campaigns} campaigns, ${formatCount(records)} results each, seed ${seed})`);
    const progress = await startProgress(out, 'pulling');
    // The demo's API is its own simulator, known only now.
    const api = {
      baseUrl: new URL(sim.url),
      apiKey: sim.apiKey,
      rate: { count: 100_000, windowMs: 1000 },
      timeoutMs: settings.timeoutMs,
      maxRetries: settings.maxRetries,
      maxRetryWaitMs: settings.maxRetryWaitMs,
    };
    const session = await SyncJob.open(Object.freeze({ ...settings, api }), signal, { events: commandEvents(out, progress) });
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
    // Hints people paste: the path as one shell word (spaces, quotes, $(…)), its escapes kept; one
    // that starts with `-` as `./-x.db`, or sqlite3 took it for an option.
    const path = shellWord(db.startsWith('-') ? `./${db}` : db);
    const me = commandName();
    out.print(`
The mirror is in ${showText(resolve(db))}. Try next:
  ${me} status --db ${path}
  ${me} export --db ${path} --table session-results --format csv -o session-results.csv
  sqlite3 ${path} "SELECT scenario_type, count(*), round(avg(score), 2) FROM session_results GROUP BY 1"
  ${me} demo --db ${path}        # again: an incremental pull finds nothing new
  ${me} simulate --port 8080   # a simulator to rehearse your own pipeline against`);
    return code;
  } finally {
    await sim.close();
  }
}
