/**
 * The other processes' requests as one process keeps them between reads of the budget's ledger
 * (store/budget-ledger.ts): until when each holds a slot, sorted, kept up to date from the rows that
 * changed since the last read, so that a read costs what changed, not every row of the window (it
 * read every row, ~1 µs each, at each of the other processes' requests: 60 ms under the ledger's lock
 * at 50,000 rows, and two pulls at 20000/1h took three times as long as one).
 */
import type { OtherRequests } from '../core/rate.js';

/** One row as read: its id, until when it holds a slot, and whether it is still in flight. */
export type HeldRow = readonly [id: number, holdsUntil: number, inFlight: number];

export class HeldSlots {
  /** Until when each row holds a slot, ascending: only those later than `trimmedAt`. */
  private readonly holds: number[] = [];
  private trimmedAt = Number.NEGATIVE_INFINITY;
  /** What each row held when last read, to take its old value out when it changes. */
  private readonly rows = new Map<number, number>();
  /** The rows still in flight, by id: their answers may free their slots sooner. */
  private readonly inFlight = new Map<number, number>();

  /** Takes in rows read (new or changed since the last read); those holding nothing at `now` are dropped. */
  apply(rows: readonly HeldRow[], now: number): void {
    for (const [id, holds, inFlight] of rows) {
      const old = this.rows.get(id);
      if (old !== undefined) {
        // A value at or before the last trim is gone already; removing an equal one would undercount.
        if (old > this.trimmedAt) removeValue(this.holds, old);
        this.rows.delete(id);
        this.inFlight.delete(id);
      }
      if (holds <= now) continue;
      this.rows.set(id, holds);
      insertValue(this.holds, holds);
      if (inFlight) this.inFlight.set(id, holds);
    }
    this.trim(now);
  }

  /** What the budget sees: the holds (the same array, kept up to date), and the latest of those in flight. */
  view(now: number): OtherRequests {
    let inFlightUntil = Number.NEGATIVE_INFINITY;
    for (const holds of this.inFlight.values()) if (holds > now && holds > inFlightUntil) inFlightUntil = holds;
    return { holds: this.holds, inFlightUntil, locked: false };
  }

  /** Forgets what holds nothing any more (the clock only goes forward for these: wall times, read again after a step). */
  private trim(now: number): void {
    let n = 0;
    while (n < this.holds.length && (this.holds[n] as number) <= now) n++;
    if (n > 0) this.holds.splice(0, n);
    if (now > this.trimmedAt) this.trimmedAt = now;
    // The maps hold a row until it changes; sweep them once they outgrow what still holds a slot.
    if (this.rows.size > 2 * this.holds.length + 64) {
      for (const [id, holds] of this.rows) {
        if (holds > this.trimmedAt) continue;
        this.rows.delete(id);
        this.inFlight.delete(id);
      }
    }
  }
}

/** The first index of `values` (ascending) not below `value`. */
function lowerBound(values: readonly number[], value: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertValue(values: number[], value: number): void {
  const at = lowerBound(values, value);
  if (at === values.length) values.push(value);
  else values.splice(at, 0, value);
}

function removeValue(values: number[], value: number): void {
  const at = lowerBound(values, value);
  if (values[at] === value) values.splice(at, 1);
}
