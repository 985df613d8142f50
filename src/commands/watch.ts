import { SyncMetrics } from '../app/metrics.js';
import { startMetricsServer } from '../app/metrics-server.js';
import { SyncJob } from '../app/sync-job.js';
import type { WatchSettings } from '../config/command-settings.js';
import { mergeEvents } from '../core/events.js';
import { currentClock } from '../core/io.js';
import { formatDuration, formatRate } from '../core/rate.js';
import { redactJson } from '../core/redact.js';
import { AuthError, CampaignSyncError, ExitCode, exitCodeFor, exitCodeForPass, isAbort, StorageError, UsageError } from '../errors.js';
import { assessHealth } from '../sync/health.js';
import type { PassResult } from '../sync/pass.js';
import type { PlannedStream } from '../sync/plan.js';
import { fleetShare, longestWait, passBudget, rankStreams, type StreamTimes, scheduleStreams } from '../sync/schedule.js';
import { commandEvents } from '../ui/events.js';
import { retainedDocument, retainedLine } from '../ui/forget.js';
import { healthDocument } from '../ui/health.js';
import { Output } from '../ui/output.js';
import { countdown } from '../ui/progress.js';
import { failureLines, passDocument, passLine, watchStartLine } from '../ui/summary.js';

/** Start-to-start spacing with up to 5% jitter, so many installations do not poll in lockstep. */
export function nextStart(startedAt: number, intervalMs: number, random: () => number = Math.random): number {
  return startedAt + intervalMs + Math.floor(intervalMs * 0.05 * random());
}

/**
 * `campaign-sync watch`: a pass every --interval. A failing pass is logged and the next interval
 * tries again; 401 stops with exit 3; SIGINT/SIGTERM/SIGHUP stop after the page in flight, exit 0.
 * With --max-cycles the exit code is the last pass's.
 */
export async function watch(settings: WatchSettings, signal: AbortSignal): Promise<number> {
  const out = new Output(settings);
  const { interval: intervalMs, maxCycles, lookbackEvery, maxAge, maxStaleness, metricsListen: metricsAt } = settings;
  const metrics = metricsAt ? new SyncMetrics() : undefined;
  // Every stream ages a whole interval (plus jitter) between passes: a --max-age within it makes
  // /healthz answer 503 between passes, and a liveness probe restart a healthy watch.
  if (metricsAt && maxAge <= intervalMs * 1.05)
    out.warn(
      `--max-age ${formatDuration(maxAge)}${settings.sourceOf('maxAge').source === 'default' ? ' (the default)' : ''} is not above --interval ${formatDuration(intervalMs)} and its 5% jitter: /healthz will answer 503 between passes, and a liveness probe would restart a healthy watch; set --max-age above --interval plus a pass`,
    );
  const openSession = () =>
    SyncJob.open(settings, signal, {
      events: mergeEvents(commandEvents(out), metrics?.events()),
      alertFailure: (text) => out.error(`${new Date().toISOString()} ${text}`),
    });
  let session = await openSession();
  // Closed after another program's lock failed a pass (below), or for the retention; opened again by the next pass.
  let closed = false;
  /** What the retention erased as the mirror was opened (store/model/retention.ts: at most once a day). */
  const sayRetained = () => {
    const r = session.store.retained;
    if (r === undefined) return;
    if (out.json) out.jsonLine({ at: new Date().toISOString(), retention: retainedDocument(r) });
    else out.notice(`${new Date().toISOString()} ${retainedLine(r, session.store.place)}`);
  };
  for (const w of session.warnings) out.warn(w);
  out.notice(watchStartLine(session.client.config.baseUrl, session.store.place, intervalMs, session.rate));
  sayRetained();
  let server: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  // The run's clock (core/io.ts) times the passes, the pause between them and when the lookback is
  // due: a test's fake clock does not wait them out.
  const clock = currentClock();
  const tick = () => (clock.monotonic ?? clock.now)();
  // The mirror's clock (the database server's for a fleet) as of the last pass, moved on by the run's
  // monotonic clock: /healthz judges each stream's age by the clock that stamped its success, without
  // a query per probe and whatever this host's clock says.
  let mirrorAt = { at: await session.store.now(), tick: tick() };
  const mirrorNow = () => mirrorAt.at + (tick() - mirrorAt.tick);
  // Per-stream times for the scheduler, in memory, on the run's clock; a restart starts from each
  // stream's last success (stamped on the mirror's clock).
  const times = new Map<string, StreamTimes>();
  const runOffset = mirrorAt.at - clock.now();
  // The streams' rows as of the last pass: /healthz and the metrics read them without a query.
  let rows = await session.store.streams();
  let names = await session.store.campaignNames();
  for (const r of rows) if (r.last_success_at !== null) times.set(r.stream, { checkedAt: Date.parse(r.last_success_at) - runOffset });
  // Planned by the limit the budget keeps to, which another process's stricter one may lower (api/budget.ts).
  let budget = passBudget(session.rate, intervalMs);
  // Known once the campaign list gives the number of streams: said once, at the first pass that shows it.
  let warnedStaleness = false;
  const checkStaleness = (streams: number) => {
    const wait = warnedStaleness ? undefined : longestWait(streams, session.rate, intervalMs, budget);
    if (wait === undefined || wait <= maxStaleness) return;
    warnedStaleness = true;
    const waitText = formatDuration(Math.ceil(wait / 1000) * 1000);
    out.warn(
      `--max-staleness ${formatDuration(maxStaleness)} cannot be kept for ${streams} streams: the request budget (${formatRate(session.rate)}) checks at most ${budget} a pass, so a stream may wait ${waitText}; set --max-staleness to ${waitText} or more, or raise --rate-limit if the service allows it`,
    );
  };
  const stamp = () => new Date().toISOString();
  let lastCode: number = ExitCode.ok;
  // Set by each return: a watch that throws or ends with an error code (a 401, --max-cycles after
  // failed passes) and committed nothing leaves no file it made (SyncJob.close).
  let failed = true;
  const end = (code: number) => {
    failed = code !== ExitCode.ok;
    return code;
  };
  // The lookback window is re-read on the first pass, then at most every --lookback-every.
  let lastLookback = Number.NEGATIVE_INFINITY;
  try {
    if (metrics && metricsAt) {
      server = await startMetricsServer(metricsAt, {
        metrics: async () => ({ body: await metrics.registry.metrics(), contentType: metrics.registry.contentType }),
        // The rule of `status --check`; 503 only when no stream is healthy (one failing campaign
        // should not get the whole watch restarted by an orchestrator).
        health: () => {
          const now = mirrorNow();
          const h = assessHealth(rows, now, maxAge);
          return {
            // Redacted again as served: a mirror written by an older version may hold the key in a stored error.
            body: redactJson(
              healthDocument(h, (r) => `${names.get(r.campaign_id) ?? r.campaign_id} (${r.endpoint})`, now),
              session.client.redact,
            ),
            ok: h.verdict !== 'down',
          };
        },
      });
      metrics.streams(rows);
      out.notice(`metrics on ${server.url}/metrics, health on ${server.url}/healthz`);
    }
    for (let cycle = 1; ; cycle++) {
      const startedAt = clock.now();
      let result: PassResult | undefined;
      try {
        // A day since the retention last ran: the mirror is opened again, which applies it under the
        // lock before the sink opens its files (an NDJSON file is rewritten by the erasure).
        if (!closed && session.store.retentionDue(await session.store.now())) {
          closed = true;
          await session.close();
        }
        if (closed) {
          session = await openSession();
          closed = false;
          sayRetained();
        }
        // The database (or NDJSON folder) moved or removed since the last pass: stop (74) before
        // committing more into a file nobody will find; a moved database is made complete first.
        await session.verify();
        const lookback = session.lookbackMs !== undefined && startedAt - lastLookback >= lookbackEvery;
        budget = passBudget(session.rate, intervalMs);
        // On a mirror a fleet may sync (PostgreSQL): the times every worker shares, on the database's clock.
        const fleet = session.store.capabilities.fleet ? await session.store.fleetTimes() : undefined;
        // More streams than the interval's budget: check the due, then the active, then the oldest.
        const select = (planned: PlannedStream[]) => {
          checkStaleness(planned.length);
          if (fleet !== undefined) {
            // Every stream, most behind first by what any worker did; this worker syncs its share of
            // the budget (and of the streams), leaving a stream another worker holds to it.
            // This worker's times are its run clock's (startedAt): moved onto the database's.
            const offset = fleet.now - clock.now();
            const shared = (k: string): StreamTimes => {
              const own = times.get(k) ?? {};
              const mine = own.checkedAt === undefined ? undefined : own.checkedAt + offset;
              const theirs = fleet.checked.get(k);
              const checkedAt = mine === undefined ? theirs : theirs === undefined ? mine : Math.max(mine, theirs);
              return { checkedAt, activeAt: own.activeAt === undefined ? undefined : own.activeAt + offset };
            };
            const order = rankStreams(
              planned.map((p) => p.id.key),
              shared,
              fleet.now,
              { intervalMs, maxStalenessMs: maxStaleness },
            );
            const byKey = new Map(planned.map((p) => [p.id.key, p]));
            return order.map((k) => byKey.get(k) as PlannedStream);
          }
          const keep = new Set(
            scheduleStreams(
              planned.map((p) => p.id.key),
              (k) => times.get(k) ?? {},
              startedAt,
              { budget, intervalMs, maxStalenessMs: maxStaleness },
            ).check,
          );
          return planned.filter((p) => keep.has(p.id.key));
        };
        // A fleet's worker: its share of the budget and of the streams, so the fleet checks each about
        // once an interval between them (or as often as the budget allows), the most behind first.
        const share =
          fleet === undefined
            ? undefined
            : { limit: (n: number) => Math.min(fleetShare(budget, fleet.workers), Math.ceil(n / fleet.workers)), skipBusy: true };
        result = await session.pass(lookback, select, share);
        for (const st of result.streams) {
          if (st.status !== 'ok') continue;
          const before = times.get(st.id.key);
          times.set(st.id.key, { checkedAt: startedAt, activeAt: st.inserted > 0 ? startedAt : before?.activeAt });
        }
        if (lookback) lastLookback = startedAt;
        lastCode = exitCodeForPass(result);
        rows = await session.store.streams();
        names = await session.store.campaignNames();
        mirrorAt = { at: await session.store.now(), tick: tick() };
        metrics?.pass(result, rows);
        if (out.json) out.jsonLine({ at: stamp(), started_at: new Date(startedAt).toISOString(), pass: cycle, ...passDocument(result) });
        else out.print(`${stamp()} pass ${cycle}: ${passLine(result)}`);
        // An error, not a warning: --quiet must still report it (the pass line above is silent then).
        for (const line of failureLines(result)) out.error(`${stamp()} pass ${cycle}: ${line}`);
      } catch (err) {
        // Another program held the database locked past busy_timeout (a sqlite3 shell, an analyst's
        // tool), or the connection to the PostgreSQL server was lost (the server ended it or
        // restarted): the pass failed and its open group or transaction was rolled back. The database
        // is closed and opened again for the next pass (a server still away fails that pass too), whose
        // sink starts from the committed checkpoints, as a new process would. Closing releases the run
        // lock meanwhile: a pull that takes it makes the reopen exit 75.
        if (err instanceof StorageError && (err.busy || err.disconnected)) {
          if (!closed) {
            closed = true;
            await session.close().catch(() => {});
          }
        }
        // Any other failed local write stops the process (exit 74): retrying could lose data.
        else if (err instanceof AuthError || err instanceof UsageError || err instanceof StorageError) throw err;
        // Stopped before its first pass had anything to report: said once by main.ts, like pull.
        if (isAbort(err) && signal.aborted) {
          if (cycle === 1) throw err;
          break;
        }
        if (!(err instanceof CampaignSyncError)) throw err;
        // The service is down or failing, or the database was locked: log it and try again at the next interval.
        lastCode = exitCodeFor(err);
        metrics?.failedPass(clock.now() - startedAt, lastCode);
        if (out.json) out.jsonLine({ at: stamp(), pass: cycle, error: err.message, exit_code: exitCodeFor(err) });
        else out.error(`${stamp()} pass ${cycle} failed: ${err.message}`);
      }
      if (signal.aborted || result?.interrupted) return end(ExitCode.ok);
      if (maxCycles !== undefined && cycle >= maxCycles) return end(lastCode);
      try {
        // Timers run on the monotonic clock and may end a millisecond before the wall clock reaches
        // the target: wait until it has, so passes are never closer than --interval start to start.
        const target = nextStart(startedAt, intervalMs);
        // On a terminal, the wait is shown: a watch that prints nothing for minutes looks hung.
        const waiting = await countdown(out, Date.now() + (target - clock.now()), (left) => `next pass in ${left}`);
        try {
          while (clock.now() < target) await clock.sleep(target - clock.now(), signal);
        } finally {
          waiting.stop();
        }
      } catch (err) {
        if (isAbort(err)) return end(ExitCode.ok);
        throw err;
      }
    }
    return end(ExitCode.ok);
  } finally {
    try {
      await server?.close();
    } finally {
      if (!closed) await session.close(failed);
    }
  }
}
