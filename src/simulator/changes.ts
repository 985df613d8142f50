/**
 * What happens to results after they were first served, as the real service does it: a result is
 * re-scored (its score and `updated_at` change), a result arrives late (its `order_index` falls below
 * cursors clients already hold, its `created_at` is the day it arrived), a result is deleted. Two
 * service faults too: one result served by two campaigns (`share`), and a campaign whose type
 * changes (`retype`). Tests and `simulate --churn` apply them; the server pages through the base data merged with them, so a
 * client sees them exactly as it would see the real service's.
 */
import type { ReportType } from '../core/types.js';
import type { SimCampaign, SimData } from './data.js';
import { hash32, prng } from './random.js';

const DAY = 86_400_000;
/** Late records are drawn from indexes no base record uses. */
const LATE_BASE = 1_000_000_000;

interface Late {
  /** Index of the base record it sits just below (its order_index is that record's slot with no jitter). */
  slot: number;
  /** Index it is generated from (distinct from every base record). */
  index: number;
  createdAt: number;
  orderIndex: bigint;
  /** A record of another campaign served here too (share): its campaign and index there. */
  from?: { campaign: SimCampaign; index: number };
}

export interface ResultsQuery {
  sort: string;
  limit: number;
  startingAfter: bigint | undefined;
  startDate: string | undefined;
  endDate: string | undefined;
  reportType: ReportType;
}

export class SimChanges {
  private readonly deleted = new Set<string>();
  private readonly rescored = new Map<string, { at: number; times: number }>();
  private readonly late = new Map<number, Late[]>();
  private lateCount = 0;

  constructor(private readonly data: SimData) {}

  /**
   * One random change, as the real service sees them (`simulate --churn`): mostly a re-score of a
   * recent result, sometimes a late arrival created `now`, sometimes a deletion. Recent: among the
   * newest tenth of the campaign's results, where a lookback window would find them.
   */
  churn(now: number, countOf: (c: SimCampaign) => number, rand: () => number): void {
    const campaigns = this.data.campaigns.filter((c) => c.type === 'SESSION_COMPLETION' || c.type === 'ROLE_SUBMISSION');
    const c = campaigns[Math.floor(rand() * campaigns.length)];
    if (!c) return;
    const count = countOf(c);
    if (count < 2) return;
    const recent = Math.max(1, Math.floor(count / 10));
    const i = count - 1 - Math.floor(rand() * recent);
    const kind = rand();
    if (kind < 0.6) this.rescore(c, i, now);
    else if (kind < 0.8) {
      try {
        this.arriveLate(c, Math.max(1, i), now);
      } catch {
        // That slot already holds a late record: this tick changes nothing.
      }
    } else this.remove(c, i);
  }

  /** Whether anything changed (when not, the server takes its direct path). */
  get any(): boolean {
    return this.deleted.size > 0 || this.rescored.size > 0 || this.late.size > 0;
  }

  /**
   * Re-scores base record `i` of campaign `c` at `at`: a new score, `updated_at` = `at`, never earlier
   * than the record's last change (a clock stepped back moves nothing backwards).
   */
  rescore(c: SimCampaign, i: number, at: number): void {
    const key = `${c.index}:${i}`;
    const before = this.rescored.get(key);
    this.rescored.set(key, { at: Math.max(at, before?.at ?? at), times: (before?.times ?? 0) + 1 });
  }

  /** Deletes base record `i` of campaign `c`: it is no longer served. */
  remove(c: SimCampaign, i: number): void {
    this.deleted.add(`${c.index}:${i}`);
  }

  /**
   * A record arrives late, created at `at`, with an `order_index` just below base record `slot`'s
   * (`slot` >= 1): below the cursor of any client that read past that record. Returns its order_index.
   */
  arriveLate(c: SimCampaign, slot: number, at: number): bigint {
    if (slot < 1) throw new Error('a late record needs a record before it');
    const orderIndex = this.data.orderIndex(c, slot) - (this.data.orderIndex(c, slot) % 10n);
    const list = this.late.get(c.index) ?? [];
    if (list.some((l) => l.orderIndex === orderIndex)) throw new Error(`slot ${slot} already holds a late record`);
    list.push({ slot, index: LATE_BASE + this.lateCount++, createdAt: at, orderIndex });
    list.sort((a, b) => (a.orderIndex < b.orderIndex ? -1 : a.orderIndex > b.orderIndex ? 1 : 0));
    this.late.set(c.index, list);
    return orderIndex;
  }

  /**
   * A service fault: campaign `to` also serves campaign `from`'s record `i`, the same id and content
   * under `to`'s campaign reference, at an order_index just below `to`'s record `slot` (as a late
   * arrival's, created when the original was). Both campaigns must be of one type. Returns the
   * order_index the copy is served at in `to`.
   */
  share(from: SimCampaign, i: number, to: SimCampaign, slot: number): bigint {
    if (from.type !== to.type) throw new Error(`campaigns of types ${from.type} and ${to.type} are read from different endpoints`);
    if (from.id === to.id) throw new Error('a record shared with its own campaign is not a second copy');
    const orderIndex = this.arriveLate(to, slot, this.data.createdAt(i));
    const late = (this.late.get(to.index) ?? []).find((l) => l.orderIndex === orderIndex) as Late;
    late.from = { campaign: from, index: i };
    return orderIndex;
  }

  /**
   * A campaign's type changes (say SESSION_COMPLETION to ROLE_SUBMISSION): the campaign list shows
   * the new type, the new type's endpoint serves its results, the old one answers 404.
   */
  retype(c: SimCampaign, type: string): void {
    c.type = type;
  }

  /**
   * One page of campaign `c`'s records with the changes applied: base indexes in [lo, hi) (the date
   * filter on base records) merged with the late records in the window, by order_index. `keep`
   * tests each base index against the date filter where [lo, hi) cannot (the unordered-times quirk).
   */
  page(c: SimCampaign, endpoint: 'session' | 'role', q: ResultsQuery, lo: number, hi: number, keep?: (i: number) => boolean) {
    const startMs = q.startDate ? Date.parse(`${q.startDate}T00:00:00Z`) : Number.NEGATIVE_INFINITY;
    const endMs = q.endDate ? Date.parse(`${q.endDate}T00:00:00Z`) + DAY : Number.POSITIVE_INFINITY;
    const asc = q.sort === 'asc';
    const after = q.startingAfter;
    const fits = (o: bigint) => after === undefined || (asc ? o > after : o < after);
    const late = (this.late.get(c.index) ?? []).filter((l) => l.createdAt >= startMs && l.createdAt < endMs && fits(l.orderIndex));
    if (!asc) late.reverse();
    let i = asc ? lo : hi - 1;
    if (after !== undefined) i = asc ? Math.max(lo, this.data.firstAfter(c, after)) : Math.min(hi, this.data.firstAfter(c, after - 1n)) - 1;
    const step = asc ? 1 : -1;
    const inRange = (k: number) => (asc ? k < hi : k >= lo);
    const out: Array<Record<string, unknown>> = [];
    let j = 0;
    for (;;) {
      while (inRange(i) && (this.deleted.has(`${c.index}:${i}`) || (keep !== undefined && !keep(i)))) i += step;
      const base = inRange(i) ? this.data.orderIndex(c, i) : undefined;
      const next = late[j];
      if (base === undefined && next === undefined) break;
      if (out.length === q.limit) return { records: out, hasMore: true };
      const takeLate = next !== undefined && (base === undefined || (asc ? next.orderIndex < base : next.orderIndex > base));
      if (takeLate) {
        out.push(this.lateRecord(c, endpoint, next, q.reportType));
        j++;
      } else {
        out.push(this.record(c, endpoint, i, q.reportType));
        i += step;
      }
    }
    return { records: out, hasMore: false };
  }

  private record(c: SimCampaign, endpoint: 'session' | 'role', i: number, report: ReportType): Record<string, unknown> {
    const r = endpoint === 'session' ? this.data.sessionResult(c, i) : this.data.roleResult(c, i, report);
    const change = this.rescored.get(`${c.index}:${i}`);
    if (change) {
      const field = endpoint === 'session' ? 'score' : 'overall_score';
      // A new score in [0, 5], different from the old one, and the time of the change.
      const rand = prng(hash32(this.data.opts.seed, c.index, i, change.times));
      const old = Number(r[field]);
      r[field] = Math.round(((old + 0.5 + rand() * 4) % 5) * 100) / 100;
      // Never before the record's own updated_at: an update does not go back in time.
      const was = Date.parse(r.updated_at as string);
      r.updated_at = new Date(Number.isNaN(was) ? change.at : Math.max(change.at, was)).toISOString();
    }
    return r;
  }

  private lateRecord(c: SimCampaign, endpoint: 'session' | 'role', l: Late, report: ReportType): Record<string, unknown> {
    const [from, index] = l.from === undefined ? [c, l.index] : [l.from.campaign, l.from.index];
    const r =
      endpoint === 'session' ? this.data.sessionResult(from, index, l.createdAt) : this.data.roleResult(from, index, report, l.createdAt);
    if (l.from !== undefined) r.campaign = { id: c.id, name: c.name };
    r.order_index = l.orderIndex <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(l.orderIndex) : l.orderIndex;
    return r;
  }
}
