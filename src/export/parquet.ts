/**
 * Parquet export (hyparquet-writer): typed columns, written one row group at a time so memory holds
 * one group whatever the table's size. Types follow the mirror's declared column types:
 * INTEGER -> INT64 (read with safeIntegers: order_index past 2^53 stays exact), REAL -> DOUBLE,
 * TEXT named `*_at` and any declared TIMESTAMP -> TIMESTAMP(MICROS, UTC) (timestamp.ts), any other TEXT (the JSON columns raw,
 * feedback and additional_scores too) -> UTF-8 string. Every column is optional (nullable).
 */
import type { SchemaElement } from 'hyparquet';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { between } from './interrupt.js';
import { type ByteSink, CHUNK } from './sink.js';
import { timestampMicros } from './timestamp.js';

const CREATED_BY = 'campaign-sync';

export type ParquetKind = 'int64' | 'double' | 'timestamp' | 'string';

export interface ParquetColumn {
  name: string;
  kind: ParquetKind;
}

/** A row group closes at this many rows, or earlier once its text reaches GROUP_CHARS. */
export const GROUP_ROWS = 10_000;
/** DETAILED role results carry kilobytes of `raw` each: a group of them is cut at 32 M characters. */
export const GROUP_CHARS = 4 * 1024 * 1024;

/** The Parquet type of a mirror column, from its name and declared SQLite type. */
export function parquetKind(name: string, declared: string | null): ParquetKind {
  const type = (declared ?? '').toUpperCase();
  if (type.includes('INT')) return 'int64';
  if (type.includes('REAL') || type.includes('FLOA') || type.includes('DOUB')) return 'double';
  // A declared time (PostgreSQL's timestamptz, --as-of's valid_from), or the mirror's text times, named *_at.
  if (type.startsWith('TIMESTAMP') || name.endsWith('_at')) return 'timestamp';
  return 'string';
}

function element(column: ParquetColumn): SchemaElement {
  const name = column.name;
  switch (column.kind) {
    case 'int64':
      return { name, type: 'INT64', repetition_type: 'OPTIONAL' };
    case 'double':
      return { name, type: 'DOUBLE', repetition_type: 'OPTIONAL' };
    case 'timestamp':
      return {
        name,
        type: 'INT64',
        repetition_type: 'OPTIONAL',
        converted_type: 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
      };
    case 'string':
      return { name, type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
  }
}

/** A ByteWriter that hands each ~1 MB it has filled to the sink instead of growing. */
class SinkWriter extends ByteWriter {
  constructor(private readonly sink: ByteSink) {
    super(CHUNK * 2);
  }

  override ensure(size: number): void {
    if (this.index > CHUNK) this.push();
    super.ensure(size);
  }

  push(): boolean {
    if (this.index === 0) return true;
    // A copy: a stream sink keeps the chunk until written, while this buffer is reused.
    const ok = this.sink.write(new Uint8Array(this.buffer.slice(0, this.index)));
    this.index = 0;
    return ok;
  }

  /** Set before finish() when no row was written (see fixEmptyFooter). */
  empty = false;

  override finish(): void {
    if (this.empty) this.fixEmptyFooter();
    this.push();
  }

  /**
   * hyparquet-writer 0.17 writes the footer's empty row-group list with element type 0, which
   * arrow-rs (parquet-wasm, and so DataFusion and Polars) rejects: "Expected list element type of
   * Struct". With no rows the whole file is still in the buffer, so the list header is set to
   * "0 structs" (0x0C) in place: num_rows 0 (0x16 0x00), then row_groups (0x19) and its header,
   * then created_by (0x28, length 13, "campaign-sync").
   */
  fixEmptyFooter(): void {
    const bytes = new Uint8Array(this.buffer, 0, this.index);
    const at = Buffer.from(bytes.buffer, 0, this.index).lastIndexOf(Buffer.from([0x16, 0x00, 0x19, 0x00, 0x28, CREATED_BY.length]));
    if (at >= 0) bytes[at + 3] = 0x0c;
  }
}

/** What a cell of each kind becomes; undefined means "not a value of this type" (written as null, counted). */
function convert(kind: ParquetKind, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  switch (kind) {
    case 'int64':
      if (typeof v === 'bigint') return v;
      return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined;
    case 'double':
      if (typeof v === 'number') return v;
      return typeof v === 'bigint' ? Number(v) : undefined;
    case 'timestamp':
      return typeof v === 'string' ? (timestampMicros(v) ?? undefined) : undefined;
    case 'string':
      if (typeof v === 'string') return v;
      if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
      return String(v);
  }
}

export interface ParquetResult {
  rows: number;
  /** Per column, the cells that were not of its type (a timestamp column's unparsable text): written as null. */
  invalid: Map<string, number>;
}

/** Writes every row to `sink` as one Parquet file; waits for the sink between row groups, and stops there once `signal` is aborted. */
export async function writeParquet(
  columns: ParquetColumn[],
  rows: Iterable<unknown[]> | AsyncIterable<unknown[]>,
  sink: ByteSink,
  signal?: AbortSignal,
): Promise<ParquetResult> {
  const writer = new SinkWriter(sink);
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.map(element)];
  const parquet = new ParquetWriter({ writer, schema, createdBy: CREATED_BY });
  const invalid = new Map<string, number>();
  const kinds = columns.map((c) => c.kind);
  let data: unknown[][] = columns.map(() => []);
  let inGroup = 0;
  let chars = 0;
  let total = 0;

  const writeGroup = async () => {
    const result = parquet.write({
      columnData: columns.map((c, i) => ({ name: c.name, data: data[i] as unknown[] })),
      rowGroupSize: inGroup,
    });
    if (result) await result;
    data = columns.map(() => []);
    inGroup = 0;
    chars = 0;
    if (!writer.push()) await sink.drain();
    await between(signal);
  };

  /** Adds a row to the group; true when the group is full. */
  const add = (row: unknown[]): boolean => {
    for (let i = 0; i < kinds.length; i++) {
      const v = row[i];
      let out = convert(kinds[i] as ParquetKind, v);
      if (out === undefined) {
        const name = (columns[i] as ParquetColumn).name;
        invalid.set(name, (invalid.get(name) ?? 0) + 1);
        out = null;
      }
      if (typeof out === 'string') chars += out.length;
      (data[i] as unknown[]).push(out);
    }
    inGroup++;
    total++;
    return inGroup >= GROUP_ROWS || chars >= GROUP_CHARS;
  };

  // Rows from SQLite come synchronously (no await per row); from PostgreSQL, asynchronously.
  if (Symbol.asyncIterator in rows) {
    for await (const row of rows) if (add(row)) await writeGroup();
  } else {
    for (const row of rows) if (add(row)) await writeGroup();
  }
  if (inGroup > 0) await writeGroup();
  writer.empty = total === 0;
  await parquet.finish();
  return { rows: total, invalid };
}
