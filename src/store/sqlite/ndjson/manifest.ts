/**
 * `<out>/_manifest.ndjson`: what each commit of a sync appended to the NDJSON files, for warehouses
 * that load by byte range. One line per commit that appended (a short pass commits once; a long one
 * every few thousand records or second: store/sqlite/group-commit.ts), all of a pass with the same run id:
 *
 *   {"run_id":"…","part":1,"at":"…","files":[{"file":"session_results.ndjson","start":0,"end":5120,"lines":3,"sha256":"…"}]}
 *
 * `start` and `end` are byte offsets, `[start, end)`; `sha256` is the hex digest of exactly those bytes.
 * The manifest is itself an append-only file of this database: its line is appended and fsynced just
 * before the commit, and its new length commits in the same transaction as the data files' lengths.
 * A crash before that commit leaves tails past the committed lengths in every file, the manifest's
 * included, which the next run cuts; after it, every committed byte has its line. So the committed
 * lines tile each file from where the manifest began to its committed length, with no gap.
 *
 * An erasure (forget, a retention) rewrites a file shorter: its earlier ranges no longer hold. It
 * appends a line of its own (`rewriteLine`), committed with the file's new length:
 *
 *   {"run_id":"…","part":1,"at":"…","rewrite":{"file":"session_results.ndjson","generation":2,"reason":"erased","size":4096,"lines":30,"sha256":"…"}}
 *
 * It voids every earlier range of that file: the file is now generation 2, whose bytes [0, size)
 * have that digest, and a loader replaces what it loaded from the file with those lines. Every range
 * line names the generation it covers (1 until the first rewrite), so the ranges tile each
 * generation of each file with no gap or overlap. The line names no deleted id: the manifest is never
 * rewritten, and an erased id must not stay in it.
 */
import { createHash, type Hash, randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import type { Db } from '../db.js';
import type { NdjsonFile } from './file.js';

export const MANIFEST_FILE = '_manifest.ndjson';

const GENERATION_KEY = 'ndjson_generation:';

/** The generation of the file at `path`: 1 until an erasure first rewrites it, then one more per rewrite. */
export function generationOf(db: Db, path: string): number {
  const stored = db
    .prepare('SELECT value FROM meta WHERE key = ?')
    .pluck()
    .get(GENERATION_KEY + path) as string | undefined;
  return stored === undefined ? 1 : Number(stored);
}

/** Records the file's new generation; call in the transaction that commits its rewrite. */
export function setGeneration(db: Db, path: string, generation: number): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    GENERATION_KEY + path,
    String(generation),
  );
}

/** The manifest line of a rewrite: the file's new generation, whole (its bytes `[0, size)`). */
export function rewriteLine(path: string, generation: number, reason: string, bytes: Buffer, lines: number, at: Date): string {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const rewrite = { file: basename(path), generation, reason, size: bytes.length, lines, sha256 };
  return `${JSON.stringify({ run_id: randomUUID(), part: 1, at: at.toISOString(), rewrite })}\n`;
}

interface Appended {
  file: string;
  generation: number;
  start: number;
  end: number;
  lines: number;
  hash: Hash;
}

/** What the open group appended, file by file, and the manifest line that records it. */
export class ManifestLines {
  private pending = new Map<string, Appended>();
  private runId = randomUUID();
  private part = 0;

  constructor(
    readonly file: NdjsonFile,
    /** The generation of a data file now (generationOf). */
    private readonly generation: (path: string) => number = () => 1,
  ) {}

  /** Bytes `[start, start + bytes.length)` were appended to `path` in the open group: hashed once, here. */
  note(path: string, start: number, bytes: Buffer, lines: number): void {
    let entry = this.pending.get(path);
    if (entry === undefined) {
      entry = { file: basename(path), generation: this.generation(path), start, end: start, lines: 0, hash: createHash('sha256') };
      this.pending.set(path, entry);
    }
    entry.hash.update(bytes);
    entry.end = start + bytes.length;
    entry.lines += lines;
  }

  /**
   * Just before the group commits: appends (and fsyncs) the line for what it appended, and returns
   * the manifest's new length, to be recorded in the same transaction; undefined when nothing was appended.
   */
  append(at: Date): number | undefined {
    if (this.pending.size === 0) return undefined;
    const files = [...this.pending.values()].map((e) => ({
      file: e.file,
      generation: e.generation,
      start: e.start,
      end: e.end,
      lines: e.lines,
      sha256: e.hash.digest('hex'),
    }));
    this.pending = new Map();
    this.part++;
    const line = `${JSON.stringify({ run_id: this.runId, part: this.part, at: at.toISOString(), files })}\n`;
    return this.file.append(Buffer.from(line, 'utf8'));
  }

  /** The group committed: the manifest's length is `end`. */
  committed(end: number): void {
    this.file.offset = end;
  }

  /** The group failed: what it noted is not in the files any more (or will be cut). */
  discard(): void {
    this.pending = new Map();
  }

  /** The pass is over: the next commit starts a new run id. */
  nextRun(): void {
    this.runId = randomUUID();
    this.part = 0;
  }
}

/** Whether the manifest's last committed line is one of ours: one JSON object with a run id. */
export function isManifestLine(line: string): boolean {
  try {
    const value = JSON.parse(line) as unknown;
    return value !== null && typeof value === 'object' && typeof (value as { run_id?: unknown }).run_id === 'string';
  } catch {
    return false;
  }
}
