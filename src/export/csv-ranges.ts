/**
 * CSV export of a table, read in rowid ranges inside one read transaction (one snapshot), with a
 * helper thread when the table is big and a second core is there. A range is read as batches of rows
 * joined into bytes by SQLite (export/csv-bytes.ts; its rows' cells where the table or the database
 * does not allow that), and reading and encoding cost about as much as sqlite3 -csv's whole job, so
 * the ranges are split: they alternate between the main thread, which encodes straight into the sink,
 * and the helper, whose bytes the main thread writes in their turn, so the file is byte for byte the
 * one thread's file (the helper made the bench's export 15-20% faster in wall time, for 40% more CPU).
 * The helper reads its own connection, trusted only once its snapshot is proven to be the main
 * thread's (store/snapshot.ts); otherwise the main thread does every range itself.
 */
import { type Db, openDatabase } from '../store/db.js';
import { dataVersion, RangeReader, type Span } from '../store/snapshot.js';
import { csvLine, Encoder } from './csv.js';
import { rangeEncoder } from './csv-bytes.js';
import { Helper, type RangeResult } from './helper.js';
import { between } from './interrupt.js';
import { CHUNK, type Kept, MemorySink, type Sink } from './sink.js';
import type { BatchQuery } from './tables.js';

export interface RangeJob {
  dbPath: string;
  /** export/tables.ts exportRangeQuery */
  sql: string;
  spanSql: string;
  params: readonly unknown[];
  /** The rows as one blob per batch, when the table allows it (export/tables.ts batchQuery). */
  batch?: BatchQuery | undefined;
  columns: readonly string[];
  raw: boolean;
}

export interface RangeOptions {
  /** A helper thread (one started early, or true to start one here) for a table of at least `minSpan` rowids. */
  helper: boolean | Helper;
  minSpan?: bigint;
  /** Tests: the worker module (tests run src/, the worker is built into dist/). */
  workerUrl?: URL;
  /** Tests: wait for the helper's verdict before the first range; the bytes a range aims at. */
  waitForHelper?: boolean;
  target?: number;
  /** Tests: called once the main thread's snapshot is open, then after each range written. */
  onSnapshot?: () => void;
  onRange?: (index: number) => void;
  /** SIGINT/SIGTERM: the export stops before its next range with the signal's abort error. */
  signal?: AbortSignal | undefined;
}

/** A range's bytes aim at about this much; a helper's range stops early past eight times it. */
const TARGET = CHUNK;
const FIRST_WIDTH = 256n;
const MIN_WIDTH = 16n;
/** Ranges queued: a helper's two, and ours encoded ahead into memory (a few MB) while one of its is late. */
const AHEAD = 8;
/** Below this many rowids a helper costs more to start (~50 ms of a core) than it saves. */
export const MIN_SPAN = 50_000n;

export interface Task {
  lo: bigint;
  hi: bigint;
  /** A range given to the helper: its bytes, and whether they are in. */
  result?: Promise<RangeResult | undefined>;
  arrived?: boolean;
  /** A range of ours encoded into memory ahead of its turn, while a helper's range before it was not in yet. */
  early?: { kept: Kept[]; rows: number };
}

/** Sizes the ranges to come from the bytes per rowid seen so far. */
class Widths {
  private bytes = 0;
  private rowids = 0n;
  width = FIRST_WIDTH;

  constructor(private readonly target: number) {}

  learn(lo: bigint, hi: bigint, bytes: number): void {
    this.bytes += bytes;
    this.rowids += hi - lo;
    const ideal = this.bytes === 0 ? this.width * 8n : (BigInt(this.target) * this.rowids) / BigInt(this.bytes);
    const capped = ideal > this.width * 8n ? this.width * 8n : ideal;
    this.width = capped < MIN_WIDTH ? MIN_WIDTH : capped;
  }
}

/** What writeCsvRanges did: rows written, whether a helper took part, how many of its ranges stopped early. */
export interface RangesDone {
  rows: number;
  helped: boolean;
  split: number;
}

/** Writes the header and every row of the job's table to `sink`. */
export async function writeCsvRanges(db: Db, job: RangeJob, sink: Sink, opts: RangeOptions): Promise<RangesDone> {
  // Read before the main snapshot opens, and again once the helper's has: equal, nobody committed between.
  const checker = opts.helper !== false ? openDatabase(job.dbPath, { mustExist: true, readonly: true }) : undefined;
  const before = checker ? dataVersion(checker) : 0;
  const reader = new RangeReader(db, job.sql, job.params, job.batch?.sql);
  const enc = new Encoder(sink);
  const target = opts.target ?? TARGET;
  let helper: Helper | undefined;
  let helped = false;
  let rows = 0;
  let split = 0;
  try {
    const span = reader.begin(job.spanSql);
    // Column names are ours, never neutralised.
    enc.line(csvLine(job.columns, true));
    // Out before any range: the helper's bytes go to the sink directly.
    if (!enc.flush()) await sink.drain();
    opts.onSnapshot?.();
    if (span === undefined) return { rows, helped, split };
    if (checker && span.hi - span.lo >= (opts.minSpan ?? MIN_SPAN)) {
      const data = {
        dbPath: job.dbPath,
        sql: job.sql,
        params: job.params,
        batch: job.batch,
        spanSql: job.spanSql,
        raw: job.raw,
        budget: 8 * target,
      };
      helper = opts.helper instanceof Helper ? opts.helper : new Helper(opts.workerUrl);
      helper.begin(data, () => dataVersion(checker) === before);
      if (opts.waitForHelper) await helper.settled;
    }
    const widths = new Widths(target);
    const ahead = new MemorySink();
    const aheadEnc = new Encoder(ahead);
    const queue: Task[] = [];
    let next = span.lo;
    for (let index = 0; ; ) {
      // Lets the helper's messages in (its "ready", its ranges) between two ranges of our own.
      await new Promise((resolve) => setImmediate(resolve));
      opts.signal?.throwIfAborted();
      // AHEAD ranges ahead: the helper is given one whenever it has fewer than two to do, we take the
      // others, so it never idles and the share of each follows their speeds; ours run ahead into
      // memory while a helper's range is not in yet.
      while (queue.length < AHEAD && next <= span.hi) {
        const task = take(span, next, widths.width);
        next = task.hi;
        if (helper?.state === 'ready' && helper.busy < 2) {
          task.result = helper.encode(task.lo, task.hi);
          void task.result.then(() => {
            task.arrived = true;
          });
        }
        queue.push(task);
      }
      const task = queue[0];
      if (task === undefined) break;
      if (task.result !== undefined && !task.arrived) {
        // Rather than wait for the helper, encode a later range of ours into memory.
        const later = queue.find((t) => t.result === undefined && t.early === undefined);
        if (later !== undefined) {
          const count = await encodeRange(reader, later.lo, later.hi, aheadEnc, ahead, job, opts.signal);
          later.early = { kept: ahead.take(), rows: count };
          continue;
        }
      }
      queue.shift();
      let from = task.lo;
      let bytes = -enc.written;
      const result = task.result === undefined ? undefined : await task.result;
      if (result !== undefined) {
        helped = true;
        // Once the sink is done with every chunk, the helper fills the buffers again.
        let left = result.chunks.length;
        const written = () => {
          if (--left === 0) helper?.give(result.chunks);
        };
        bytes += await writeAll(
          sink,
          result.chunks.map((chunk) => ({ chunk, written })),
        );
        rows += result.rows;
        from = result.next ?? task.hi;
        if (result.next !== undefined) split++;
      } else if (task.early !== undefined) {
        bytes += await writeAll(sink, task.early.kept);
        rows += task.early.rows;
        from = task.hi;
      }
      if (from < task.hi) rows += await encodeRange(reader, from, task.hi, enc, sink, job, opts.signal);
      widths.learn(task.lo, task.hi, bytes + enc.written);
      opts.onRange?.(index++);
    }
    return { rows, helped, split };
  } finally {
    helper?.stop();
    if (opts.helper instanceof Helper) opts.helper.stop();
    reader.end();
    checker?.close();
  }
}

/** Writes kept chunks in order; returns their bytes. */
async function writeAll(sink: Sink, kept: readonly Kept[]): Promise<number> {
  let bytes = 0;
  for (const { chunk, written } of kept) {
    bytes += chunk.byteLength;
    if (!sink.write(chunk, written)) await sink.drain();
  }
  return bytes;
}

/** The next range from `lo`: `width` rowids, fewer near the end of the span. */
export function take(span: Span, lo: bigint, width: bigint): Task {
  // Near the end, a quarter of what is left at most: the last ranges shrink, so neither thread waits
  // long for the other's last one.
  const tail = (span.hi + 1n - lo) / 4n;
  const hi = lo + (width > tail && tail >= MIN_WIDTH ? tail : width);
  return { lo, hi: hi > span.hi ? span.hi + 1n : hi };
}

/**
 * Encodes [lo, hi) straight into the sink (flushed at the end, so a helper's bytes can follow); stops
 * between two chunks once `signal` is aborted (a range of big rows can be many chunks).
 */
async function encodeRange(
  reader: RangeReader,
  lo: bigint,
  hi: bigint,
  enc: Encoder,
  sink: Sink,
  job: RangeJob,
  signal: AbortSignal | undefined,
): Promise<number> {
  const ranged = rangeEncoder(reader, lo, hi, job);
  let count = 0;
  try {
    for (;;) {
      const step = ranged.step(enc);
      count += step.rows;
      if (!enc.flush()) await sink.drain();
      if (step.done) return count;
      await between(signal);
    }
  } finally {
    ranged.close();
  }
}
