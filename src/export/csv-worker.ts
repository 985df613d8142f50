/**
 * The helper thread of a CSV export (export/helper.ts): opens its own read-only connection, opens a
 * read transaction at once (its snapshot, which the main thread checks is the same as its own), then
 * encodes the rowid ranges it is given, in order, and hands back each range's bytes (transferred, not
 * copied). A range whose output passes `budget` bytes stops early and says where, so the main thread
 * encodes the rest itself and no range holds more than about that much memory.
 */
import { parentPort } from 'node:worker_threads';
import { openDatabase } from '../store/db.js';
import { RangeReader } from '../store/snapshot.js';
import { Encoder, newBuffer } from './csv.js';
import { rangeEncoder } from './csv-bytes.js';
import type { HelperData, HelperReply, HelperRequest } from './helper.js';
import { MemorySink } from './sink.js';

const port = parentPort;

function reply(message: HelperReply, transfer: ArrayBuffer[] = []): void {
  port?.postMessage(message, transfer);
}

/** Buffers the main thread has written and given back. */
const free: ArrayBuffer[] = [];
const alloc = (): Buffer => {
  const buffer = free.pop();
  return buffer === undefined ? newBuffer() : Buffer.from(buffer);
};

const chunks = new MemorySink();
// One encoder for every range: the buffer it holds after a range's last flush serves the next range.
const enc = new Encoder(chunks, alloc);

function encodeRange(data: HelperData, reader: RangeReader, id: number, lo: bigint, hi: bigint): void {
  const start = enc.written;
  const ranged = rangeEncoder(reader, lo, hi, data);
  let count = 0;
  let next: bigint | undefined;
  try {
    for (;;) {
      const step = ranged.step(enc);
      count += step.rows;
      enc.flush();
      if (step.done) break;
      if (enc.written - start >= data.budget) {
        // The main thread reads on from the row after this one.
        next = (step.last as bigint) + 1n;
        break;
      }
    }
  } finally {
    ranged.close();
  }
  // Every chunk owns its ArrayBuffer (2 MB or more, never Buffer's shared pool): moved, not copied.
  const list = chunks.take().map((kept) => kept.chunk);
  const buffers = [...new Set(list.map((c) => c.buffer as ArrayBuffer))];
  reply({ type: 'range', id, rows: count, chunks: list, next }, buffers);
}

if (port) {
  let data: HelperData | undefined;
  let db: ReturnType<typeof openDatabase> | undefined;
  let reader: RangeReader | undefined;
  const close = () => {
    reader?.end();
    db?.close();
    port.close();
  };
  port.on('message', (request: HelperRequest) => {
    if (request.type === 'free') {
      free.push(...request.buffers);
      return;
    }
    if (request.type === 'job') {
      try {
        data = request.data;
        db = openDatabase(data.dbPath, { mustExist: true, readonly: true });
        reader = new RangeReader(db, data.sql, data.params, data.batch?.sql);
        reader.begin(data.spanSql);
        reply({ type: 'ready' });
      } catch (err) {
        reply({ type: 'failed', message: (err as Error).message });
        close();
      }
      return;
    }
    if (request.type === 'stop' || reader === undefined || data === undefined) return close();
    try {
      encodeRange(data, reader, request.id, request.lo, request.hi);
    } catch (err) {
      // The main thread encodes the range itself, and reports the error if it is real.
      reply({ type: 'failed', message: (err as Error).message });
      close();
    }
  });
}
