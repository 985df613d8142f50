/**
 * The main thread's side of CSV export's helper thread (export/csv-worker.ts). The helper is only
 * trusted once its snapshot is proven to be the main thread's (`sameSnapshot`, store/snapshot.ts);
 * until then, and after any failure, it is given nothing and the main thread does the work alone.
 */
import { Worker } from 'node:worker_threads';
import type { BatchQuery } from './tables.js';

/** What the worker is started with. */
export interface HelperData {
  dbPath: string;
  /** The range SELECT (export/tables.ts exportRangeQuery), its parameters before the bounds, the span query. */
  sql: string;
  params: readonly unknown[];
  /** The rows as one blob per batch (export/tables.ts batchQuery), when the table allows it. */
  batch?: BatchQuery | undefined;
  spanSql: string;
  /** --raw-csv: formulas left as they are. */
  raw: boolean;
  /** Bytes after which a range stops early. */
  budget: number;
}

export type HelperRequest =
  /** What to read: the worker opens its connection and snapshot, then answers `ready`. */
  | { type: 'job'; data: HelperData }
  | { type: 'range'; id: number; lo: bigint; hi: bigint }
  /** Buffers of earlier ranges, written: the helper fills them again (memory stays flat). */
  | { type: 'free'; buffers: ArrayBuffer[] }
  | { type: 'stop' };

export type HelperReply =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  /** `next`: the rowid the range stopped before, when it stopped early. */
  | { type: 'range'; id: number; rows: number; chunks: Uint8Array[]; next: bigint | undefined };

/** A range the helper encoded. */
export type RangeResult = Extract<HelperReply, { type: 'range' }>;

/** Where the compiled worker lives (beside this module in dist/). */
export const WORKER_URL = new URL('./csv-worker.js', import.meta.url);

/**
 * A worker bin/campaign-sync.js started for `export` before loading the CLI: its ~100-200 ms of
 * start-up (a Node environment of its own, its modules) then overlap the CLI's, and it is ready about
 * when the main thread's first range begins. `failed` once it errs or exits.
 */
interface Prestarted {
  worker: Worker;
  url: string;
  failed: boolean;
}

/** The global slot the launcher fills (a plain script outside the bundle: it cannot import this module). */
const PRESTARTED = Symbol.for('campaign-sync.csv-helper');

/** The launcher's worker for `url`, taken once; one that failed, or runs another file, is stopped. */
function takePrestarted(url: URL): Worker | undefined {
  const slots = globalThis as unknown as Record<symbol, Prestarted | undefined>;
  const slot = slots[PRESTARTED];
  if (slot === undefined) return undefined;
  slots[PRESTARTED] = undefined;
  if (!slot.failed && slot.url === url.href) return slot.worker;
  void slot.worker.terminate();
  return undefined;
}

/** Stops the launcher's worker when the export has no use for it (another format, PostgreSQL, one core). */
export function discardPrestarted(): void {
  takePrestarted(new URL('about:none'));
}

export class Helper {
  /** starting: not yet trusted; ready: its snapshot is ours; gone: failed, refused or stopped. */
  state: 'starting' | 'ready' | 'gone' = 'starting';
  /** Resolves once the helper is trusted or gone. */
  readonly settled: Promise<void>;
  private settle: () => void = () => {};
  private readonly worker: Worker;
  private readonly waiting = new Map<number, (result: RangeResult | undefined) => void>();
  private ids = 0;
  private sameSnapshot: (() => boolean) | undefined;

  /**
   * Starts the thread (or adopts the launcher's), which waits for its job (begin()): started early,
   * its start-up overlaps the main thread's own (the CLI loaded, the database opened, the query prepared).
   */
  constructor(url: URL = WORKER_URL) {
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
    this.worker = takePrestarted(url) ?? new Worker(url);
    // The export never waits for a helper to exit.
    this.worker.unref();
    this.worker.on('message', (reply: HelperReply) => {
      if (reply.type === 'ready') {
        if (this.state !== 'starting') return;
        let same = false;
        try {
          same = this.sameSnapshot?.() === true;
        } catch {
          // Could not tell: not trusted.
        }
        if (same) this.state = 'ready';
        else this.stop();
        this.settle();
      } else if (reply.type === 'range') {
        this.waiting.get(reply.id)?.(reply);
        this.waiting.delete(reply.id);
      } else this.gone();
    });
    this.worker.on('error', () => this.gone());
    this.worker.on('exit', () => this.gone());
  }

  /** Gives the job; `sameSnapshot` is asked once the worker has opened its snapshot: true if it is the main thread's. */
  begin(data: HelperData, sameSnapshot: () => boolean): void {
    this.sameSnapshot = sameSnapshot;
    if (this.state !== 'gone') this.worker.postMessage({ type: 'job', data } satisfies HelperRequest);
  }

  /** Ranges asked for and not yet answered. */
  get busy(): number {
    return this.waiting.size;
  }

  /** Asks for the range [lo, hi); resolves with its bytes, or undefined if the helper failed first. */
  encode(lo: bigint, hi: bigint): Promise<RangeResult | undefined> {
    const id = ++this.ids;
    return new Promise((resolve) => {
      if (this.state === 'gone') return resolve(undefined);
      this.waiting.set(id, resolve);
      this.worker.postMessage({ type: 'range', id, lo, hi } satisfies HelperRequest);
    });
  }

  /** Gives written chunks' buffers back for the helper to fill again. */
  give(chunks: readonly Uint8Array[]): void {
    if (this.state === 'gone') return;
    const buffers = [...new Set(chunks.map((c) => c.buffer as ArrayBuffer))];
    this.worker.postMessage({ type: 'free', buffers } satisfies HelperRequest, buffers);
  }

  /** Lets the worker end its transaction and exit; anything still asked for resolves undefined. */
  stop(): void {
    if (this.state !== 'gone') this.worker.postMessage({ type: 'stop' } satisfies HelperRequest);
    this.gone();
  }

  private gone(): void {
    this.state = 'gone';
    this.settle();
    for (const resolve of this.waiting.values()) resolve(undefined);
    this.waiting.clear();
  }
}
