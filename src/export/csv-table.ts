/**
 * CSV export of a table with a row id, on one thread and in one read transaction (one snapshot,
 * whatever a pull commits meanwhile: store/sqlite/snapshot.ts): SQLite joins each batch of rows into bytes
 * that are encoded straight into the encoder's buffers (export/csv-bytes.ts), and the buffers go to
 * the sink a chunk at a time. A second thread encoding every other range took 1.4x this CPU, for
 * 0.9-1.45x this wall time on a shared 2-core machine (paired rounds): not worth its code.
 */
import type { RowRanges } from '../store/port.js';
import { csvLine, Encoder } from './csv.js';
import { rangeEncoder } from './csv-bytes.js';
import { between } from './interrupt.js';
import type { ByteSink } from './sink.js';

export interface TableJob {
  /** Which cells of a batch carry their type, when the table's rows can be read as batches (store/sqlite/export-sql.ts batchQuery). */
  batch?: { typed: readonly boolean[] } | undefined;
  columns: readonly string[];
  /** --raw-csv: formulas left as they are. */
  raw: boolean;
}

/** Every rowid SQLite allows; the end is one past the largest, never bound itself. */
const FIRST = -(2n ** 63n);
const END = 2n ** 63n;

/**
 * Writes the header and every row of the ranges' table to `sink`; returns the number of rows. Stops
 * between two chunks once `signal` is aborted (a chunk can hold many batches, or one big row).
 */
export async function writeCsvTable(reader: RowRanges, job: TableJob, sink: ByteSink, signal?: AbortSignal): Promise<number> {
  const enc = new Encoder(sink);
  // Column names are ours, never neutralised.
  enc.line(csvLine(job.columns, true));
  reader.begin();
  let ranged: ReturnType<typeof rangeEncoder> | undefined;
  try {
    ranged = rangeEncoder(reader, FIRST, END, job);
    let rows = 0;
    for (;;) {
      const step = ranged.step(enc);
      rows += step.rows;
      if (!enc.flush()) await sink.drain();
      if (step.done) return rows;
      await between(signal);
    }
  } finally {
    ranged?.close();
    reader.end();
  }
}
