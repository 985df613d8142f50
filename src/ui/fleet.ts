import type { FleetStatus } from '../store/model/stream-leases.js';
import { showText } from './escape.js';
import { relativeTime } from './health.js';

/** Relative times on the database's clock (the worker hosts' clocks need not agree with this one). */
const ago = (iso: string, f: FleetStatus) => relativeTime(iso, Date.parse(f.now));

/** A lease whose holder stopped heartbeating, in words: what `status --check` reports. */
export function stalledLine(l: FleetStatus['leases'][number], f: FleetStatus): string {
  const w = f.workers.find((x) => x.id === l.worker);
  return showText(
    `stream ${l.stream}: its worker (${l.host}, pid ${l.pid}) stopped heartbeating${w ? ` ${ago(w.heartbeat, f)}` : ''} and no other worker has taken the stream over; start a worker, or check that host`,
  );
}

/** The lines under `status`'s table: each live worker with its streams, each leased stream's worker, the budget. */
export function fleetLines(f: FleetStatus): string[] {
  const lines: string[] = [];
  for (const w of f.workers) {
    const state = w.alive ? `heartbeat ${ago(w.heartbeat, f)}` : `stopped heartbeating ${ago(w.heartbeat, f)}`;
    const streams = w.streams.length === 0 ? 'no stream now' : `syncing ${w.streams.join(', ')}`;
    lines.push(showText(`worker ${w.host} pid ${w.pid}: since ${w.since}, ${state}, ${streams}`));
  }
  for (const l of f.leases) if (l.stalled) lines.push(stalledLine(l, f));
  if (f.budget)
    lines.push(
      `budget: ${f.budget.used} of ${f.budget.slots} request slots busy (sent within the last window, or in flight; every worker)`,
    );
  return lines;
}

/** The fleet in `status --json`. */
export function fleetDocument(f: FleetStatus) {
  return {
    at: f.now,
    workers: f.workers.map((w) => ({
      host: w.host,
      pid: w.pid,
      since: w.since,
      last_heartbeat: w.heartbeat,
      lease_ms: w.leaseMs,
      alive: w.alive,
      streams: w.streams,
    })),
    leases: f.leases.map((l) => ({
      stream: l.stream,
      host: l.host,
      pid: l.pid,
      since: l.since,
      expires_at: l.expires,
      stalled: l.stalled,
    })),
    budget: f.budget ? { used: f.budget.used, slots: f.budget.slots } : null,
  };
}
