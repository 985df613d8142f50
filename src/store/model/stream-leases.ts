/**
 * The port of a mirror whose streams several workers sync (PostgreSQL: store/pg/leases.ts): a pass
 * takes each stream by a lease before syncing it, and gives it back when the stream is done for the
 * pass. SQLite and NDJSON have none: one host, and the run lock keeps a second process out.
 */

/** What asking for a stream's lease gave: the stream is this worker's now; another live worker holds it; or a sync of it that began after the pass did has completed meanwhile. */
export type Claim = 'taken' | 'busy' | 'done';

export interface StreamLeases {
  /** The start of a pass on the database's clock, handed back to `claim` (opaque). */
  begin(): Promise<string>;
  /**
   * Takes the stream's lease if nobody holds it (or its holder stopped renewing it): 'taken'. A
   * stream whose last completed sync began after `passStart` needs no sync in this pass: 'done'.
   */
  claim(stream: string, passStart: string): Promise<Claim>;
  /** Gives the lease back; `done`: the stream's sync completed (a later pass elsewhere may count on it). */
  release(stream: string, done: boolean): Promise<void>;
  /** How long a pass waits before asking again for a stream another worker holds (ms). */
  readonly retryMs: number;
}

/** Who syncs what across a fleet (`status`): the database's view, every time on its clock. */
export interface FleetStatus {
  /** The database's clock when read (ISO). */
  now: string;
  /** Workers that heartbeated within their lease (or hold a lease): host, pid, start, last heartbeat. */
  workers: Array<{
    id: string;
    host: string;
    pid: number;
    since: string;
    heartbeat: string;
    leaseMs: number;
    alive: boolean;
    streams: string[];
  }>;
  /** Streams leased now, with their holder; `stalled`: the holder stopped heartbeating for longer than its lease and nobody took over. */
  leases: Array<{ stream: string; worker: string; host: string; pid: number; since: string; expires: string; stalled: boolean }>;
  /**
   * The request budget's slots busy now, over every key, if the mirror shares one: a slot is busy from
   * its request's send until a window after its answer.
   */
  budget?: { used: number; slots: number } | undefined;
}

/** What a fleet's watch schedules by (sync/schedule.ts): times every worker shares, on the database's clock (ms). */
export interface FleetTimes {
  now: number;
  /** Stream -> when its last completed sync began. */
  checked: Map<string, number>;
  /** Workers alive now (this one included): they share the request budget. */
  workers: number;
}
