/**
 * The simulator's data: campaigns and their results, generated on demand from the seed, so a
 * million records cost no memory. Record i of campaign c is a pure function of (seed, c, i).
 *
 * Time: record i of a campaign is created at `historyStart + i * spacing`, so `created_at` grows
 * with `order_index` (the spec's "newest first" and "by order_index" orders agree). Records added by
 * --growth arrive after the server started and carry their arrival time. With `unorderedTimes` (the
 * order the provider's docs warn of) each history record is created up to two spacings earlier, so
 * about one neighbour in eight has a higher `order_index` and an earlier `created_at`, and one
 * record in four was updated before it was created; every other value is the same.
 *
 * Over 250 lines because every field of the spec is generated here, each a pure function of
 * (seed, campaign, index); the vocabulary tables (names, labels, rationales) would be the first to
 * move to a file of their own.
 */

import type { ReportType } from '../core/types.js';
import { UsageError } from '../errors.js';
import { CEFR_LEVELS, RECOMMENDATION_STATUSES, SCENARIO_TYPE_KEYS, SKILL_KEYS } from '../spec/schemas.js';
import { hash32, pickOne, prng, uuidFrom } from './random.js';

export interface DataOptions {
  seed: number;
  campaigns: number;
  records: number;
  /** First order_index of every campaign (a bigint lets tests start past 2^53). */
  orderIndexStart: bigint;
  /** Campaigns of a type the spec does not name, to rehearse the client's skip path. */
  unknownTypeCampaigns: number;
  /** `created_at` does not follow `order_index`; `updated_at` may come before `created_at`. */
  unorderedTimes?: boolean;
  /** Only the first N campaigns grow with --growth (--growth-campaigns); undefined: all of them. */
  growthCampaigns?: number | undefined;
}

export interface SimCampaign {
  index: number;
  id: string;
  name: string;
  display_name: string;
  type: string;
  created_at: string;
}

const DAY = 86_400_000;
/** Generated history ends here; campaign c is created c days before history starts. */
const HISTORY_END = Date.UTC(2026, 5, 1);
const HISTORY_DAYS = 120;
const ORDER_STRIDE = 10n;
/** The largest order_index the service can serve: it is an int64. */
const INT64_MAX = 2n ** 63n - 1n;
/** Evaluations of a result are spread over this long. */
const EVALUATION_SPREAD_MS = 600_000;
/** How far ahead --growth is counted when --order-index-start is checked: a year. */
const GROWTH_HORIZON_MS = 365 * DAY;

/**
 * Refuses an --order-index-start that would serve an order_index past int64, which the real service
 * cannot: counting `records` a campaign plus a year of growth at `growthPerMs`. Names the largest
 * start that fits. (Past a year, growth stops at int64 instead: SimData.count.)
 */
export function checkOrderIndexRoom(start: bigint, records: number, growthPerMs: number): void {
  const grown = growthPerMs > 0 ? Math.ceil(growthPerMs * GROWTH_HORIZON_MS) : 0;
  const served = BigInt(records + grown);
  // Record i's order_index is start + 10 i + jitter, the jitter at most 9.
  const last = start + (served - 1n) * ORDER_STRIDE + 9n;
  if (last <= INT64_MAX) return;
  const largest = INT64_MAX - 9n - (served - 1n) * ORDER_STRIDE;
  const what = grown > 0 ? `${records} records a campaign and a year of --growth (${grown} more)` : `${records} records a campaign`;
  throw new UsageError(
    `--order-index-start ${start}: ${what} would reach order_index ${last}, past int64 (${INT64_MAX}); ` +
      (largest >= 0n ? `the largest start that fits is ${largest}` : 'no start fits: lower --records or --growth'),
  );
}

const FIRST = [
  'Ana',
  'José',
  'Zoë',
  'Łukasz',
  'Siobhán',
  'Nguyễn',
  'Søren',
  'Aiko',
  'Chloé',
  'Émile',
  'Olu',
  'Priya',
  'Sven',
  'Fatima',
  'Liam',
  'Mei',
  '李',
  'Dmitri',
];
const LAST = [
  "O'Brien",
  'Müller',
  'García',
  'Kowalski',
  'Smith, Jr.',
  'Dubois',
  'Tanaka',
  'Okafor',
  'Rossi',
  'Andersson',
  'Van der Berg',
  '王',
  'Nakamura',
  'Silva',
];
const DOMAINS = ['example.com', 'mail.example.org', 'candidates.example.net'];
const SCENARIO_LABELS: Record<string, string> = {
  EMAIL: 'Email',
  CHAT: 'Chat',
  THREADED_EMAIL: 'Threaded email',
  VOICE_CHAT: 'Voice chat',
};
const SCENARIO_NAMES = [
  'Refund request, second contact',
  'Late delivery — angry customer',
  'Password reset "urgent"',
  'Billing dispute\nwith attachments',
  'Onboarding a new client',
  'Escalation to a manager',
  'Service outage: status update',
  'Café order mix-up',
];
const SKILL_LABELS: Record<string, string> = {
  RESOURCEFULNESS: 'Resourcefulness',
  CLIENT_EMPATHY: 'Client empathy',
  JUDGMENT: 'Judgment',
  ATTENTION_TO_DETAIL: 'Attention to detail',
  PRIORITIZATION: 'Prioritization',
  WRITTEN_COMMUNICATION: 'Written communication',
  CRITICAL_THINKING: 'Critical thinking',
  COMMUNICATION: 'Communication',
  SAFETY_AWARENESS: 'Safety awareness',
};
const RATIONALES = [
  'The candidate acknowledged the issue, apologised, and offered a concrete next step.',
  'Clear structure; however, the reply "promised" a refund without checking policy.',
  'Missed the second question in the thread.\nOtherwise accurate and polite.',
  'Prioritised the outage over the billing query, which was the right call — well done.',
  'Used the customer\'s name, kept a calm tone, and summarised: "we will call you by 5 pm".',
  'Spotted the wrong order number (#4411 vs #4441) and corrected it before replying.',
  'Réponse claire et empathique; a few typos ("recieve", "seperate").',
];
const STRENGTHS = [
  'Empathetic opening',
  'Accurate summary of the problem',
  'Clear next steps, with dates',
  'Kept the reply short; no jargon',
];
const GROWTHS = [
  'Confirm identity before sharing details',
  'Answer every question in the thread',
  'Avoid promising outcomes ("guaranteed")',
];
const CAMPAIGN_ROLES = [
  'Support agents EMEA',
  'Chat specialists, night shift',
  'Claims handlers — Q3',
  'Sales development reps',
  'Técnicos de soporte',
  'Trust & safety reviewers',
];

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The same instant without its timezone suffix, as the spec says score details may carry. */
function isoNoZone(ms: number): string {
  return new Date(ms).toISOString().slice(0, -1);
}

export class SimData {
  readonly campaigns: SimCampaign[];
  readonly byId: Map<string, SimCampaign>;
  private readonly spacing: number;
  private readonly historyStart: number;
  /** How many distinct candidates the results are drawn from. */
  private readonly poolSize: number;
  /** Records a campaign can hold before an order_index would pass int64: where growth stops. */
  private readonly capacity: number;

  constructor(
    readonly opts: DataOptions,
    /** When the server started: growth counts from here. */
    readonly startedAt: number,
    /** Records per campaign per millisecond added by --growth (0 for none). */
    readonly growthPerMs: number,
  ) {
    this.historyStart = HISTORY_END - HISTORY_DAYS * DAY;
    this.poolSize = Math.max(10, Math.floor(0.4 * opts.records * Math.max(1, opts.campaigns)));
    this.spacing = Math.min(6 * 3_600_000, Math.floor((HISTORY_DAYS * DAY) / Math.max(1, opts.records)));
    const room = (INT64_MAX - 9n - opts.orderIndexStart) / ORDER_STRIDE + 1n;
    this.capacity = room > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Math.max(0, Number(room));
    this.campaigns = [];
    const total = opts.campaigns + opts.unknownTypeCampaigns;
    for (let c = 0; c < total; c++) {
      const rand = prng(hash32(opts.seed, 0xca, c));
      const role = pickOne(rand, CAMPAIGN_ROLES);
      const type = c >= opts.campaigns ? 'LIVE_INTERVIEW' : c % 2 === 0 ? 'SESSION_COMPLETION' : 'ROLE_SUBMISSION';
      this.campaigns.push({
        index: c,
        id: uuidFrom(rand),
        name: `${type === 'SESSION_COMPLETION' ? 'session' : type === 'ROLE_SUBMISSION' ? 'role' : 'interview'}-${c + 1}-${role
          .normalize('NFD')
          .replace(/[\u0300-\u036f]/g, '')
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '')}`,
        display_name: `${role} (${c + 1})`,
        type,
        created_at: iso(this.historyStart - (c + 1) * DAY - (hash32(opts.seed, c) % DAY)),
      });
    }
    this.byId = new Map(this.campaigns.map((c) => [c.id, c]));
  }

  /**
   * How many records a campaign holds at time `now` (grows with --growth). Given campaign `c`, one
   * past the first `growthCampaigns` keeps its starting records; without `c`, a growing campaign's.
   */
  count(now: number, c?: SimCampaign): number {
    if (c !== undefined && !this.grows(c)) return this.opts.records;
    const grown = this.growthPerMs > 0 ? Math.floor((now - this.startedAt) * this.growthPerMs) : 0;
    return Math.min(this.opts.records + Math.max(0, grown), this.capacity);
  }

  /** Whether campaign `c` receives --growth (the first `growthCampaigns`, or all). */
  grows(c: SimCampaign): boolean {
    return this.opts.growthCampaigns === undefined || c.index < this.opts.growthCampaigns;
  }

  orderIndex(c: SimCampaign, i: number): bigint {
    const jitter = BigInt(hash32(this.opts.seed, c.index, i, 0x01) % 9) + 1n;
    return this.opts.orderIndexStart + BigInt(i) * ORDER_STRIDE + jitter;
  }

  /** The first record index whose order_index is greater than `cursor`. */
  firstAfter(c: SimCampaign, cursor: bigint): number {
    if (cursor < this.opts.orderIndexStart) return 0;
    const i = Number((cursor - this.opts.orderIndexStart) / ORDER_STRIDE);
    return this.orderIndex(c, i) > cursor ? i : i + 1;
  }

  createdAt(i: number): number {
    if (i < this.opts.records) {
      const t = this.historyStart + i * this.spacing;
      return this.opts.unorderedTimes ? t - (hash32(this.opts.seed, i, 0x7e) % (2 * this.spacing + 1)) : t;
    }
    // Growth: spread evenly from the server's start. Grown record n is served from the moment
    // count() reaches n + 1, and that moment is its arrival: the first whole millisecond where it
    // does, computed with count()'s own arithmetic, so a record is never created after it is served.
    const n = i - this.opts.records;
    let t = Math.ceil((n + 1) / this.growthPerMs);
    while (t > 0 && Math.floor((t - 1) * this.growthPerMs) >= n + 1) t--;
    while (Math.floor(t * this.growthPerMs) < n + 1) t++;
    return this.startedAt + t;
  }

  /** Whether `created_at` rises with the index (not so with `unorderedTimes`). */
  get timesOrdered(): boolean {
    return !this.opts.unorderedTimes;
  }

  /**
   * Whether record i arrives while the server runs (--growth, and late arrivals, whose indexes lie past
   * the history): its `created_at` is the moment it is first served, so nothing in it may be later.
   */
  private arrives(i: number): boolean {
    return i >= this.opts.records;
  }

  /**
   * `updated_at` of record i: `after` ms past its creation, or as long before it (unorderedTimes, one
   * in four). A record that arrives while the server runs is served the moment it is created: updated
   * then too, never in the future (a later re-score moves it forward: changes.ts).
   */
  private updatedAt(c: SimCampaign, i: number, created: number, after: number): string {
    if (this.arrives(i)) return iso(created);
    const before = this.opts.unorderedTimes && hash32(this.opts.seed, c.index, i, 0x7f) % 4 === 0;
    return iso(before ? created - after : created + after);
  }

  /** When record i's evaluations start: 10 minutes before an arriving record's creation, at a history record's. */
  private evaluatedFrom(i: number, created: number): number {
    return this.arrives(i) ? created - EVALUATION_SPREAD_MS : created;
  }

  /** The first record index created on or after `ms` (only while created_at is monotonic in the index). */
  firstCreatedAtOrAfter(ms: number, count: number): number {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.createdAt(mid) < ms) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * A candidate drawn from a pool about 40% the size of the results: people recur, retaking a
   * campaign or applying to several, so "latest result per candidate" and retakes can be tried.
   */
  private person(rand: () => number): { id: string; email: string } {
    return this.candidate(Math.floor(rand() * this.poolSize));
  }

  /** Candidate `n` of the pool: the same person wherever they appear. */
  private candidate(n: number): { id: string; email: string } {
    const rand = prng(hash32(this.opts.seed, n, 0xca7));
    const first = pickOne(rand, FIRST);
    const last = pickOne(rand, LAST);
    // E-mail local parts stay ASCII: accents dropped, names with no Latin letters left out.
    const ascii = (name: string) =>
      name
        .normalize('NFD')
        .replace(/[^A-Za-z]/g, '')
        .toLowerCase();
    const local = [ascii(first), ascii(last)].filter(Boolean).join('.') || 'candidate';
    // The pool index keeps every candidate's e-mail their own.
    return { id: uuidFrom(rand), email: `${local}${n}@${pickOne(rand, DOMAINS)}` };
  }

  /** A scenario of the catalogue: each name has one stable id and one type, as on the real service. */
  private scenario(rand: () => number) {
    const n = Math.floor(rand() * SCENARIO_NAMES.length);
    const fixed = prng(hash32(this.opts.seed, n, 0x5c));
    const key = pickOne(fixed, SCENARIO_TYPE_KEYS);
    return { id: uuidFrom(fixed), name: SCENARIO_NAMES[n] as string, type: { key, label: SCENARIO_LABELS[key] as string } };
  }

  private evalResults(rand: () => number, at: number) {
    const n = 2 + Math.floor(rand() * 4);
    const out = [];
    for (let k = 0; k < n; k++) {
      const key = pickOne(rand, SKILL_KEYS);
      out.push({
        score: (Math.round(rand() * 50) / 10).toFixed(1),
        skill: { key, label: SKILL_LABELS[key] as string },
        rationale: pickOne(rand, RATIONALES),
        evaluated_at: iso(at + Math.floor(rand() * EVALUATION_SPREAD_MS)),
        evaluation_id: uuidFrom(rand),
      });
    }
    return out;
  }

  private feedback(rand: () => number) {
    const skill = pickOne(rand, SKILL_KEYS);
    return {
      strengths: [{ description: pickOne(rand, STRENGTHS) }, { description: pickOne(rand, STRENGTHS) }],
      growths: [{ description: pickOne(rand, GROWTHS) }],
      improvement_criteria: [{ skill, title: `Improve ${SKILL_LABELS[skill]?.toLowerCase()}`, description: pickOne(rand, GROWTHS) }],
      cross_attempts_feedback: rand() < 0.5 ? null : { description: 'Better than the previous attempt, "much" calmer.' },
    };
  }

  /** §2.8: about 10% each absent, null and {}, the rest a CEFR level. Returns undefined for absent. */
  private additionalScores(rand: () => number): object | null | undefined {
    const r = rand();
    if (r < 0.1) return undefined;
    if (r < 0.2) return null;
    if (r < 0.3) return {};
    return { cefr: { score: pickOne(rand, CEFR_LEVELS) } };
  }

  private orderIndexValue(c: SimCampaign, i: number): number | bigint {
    const v = this.orderIndex(c, i);
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  /** A session result record (§2.11); `created` overrides the creation time (late arrivals). */
  sessionResult(c: SimCampaign, i: number, created = this.createdAt(i)): Record<string, unknown> {
    const rand = prng(hash32(this.opts.seed, c.index, i, 0x5e));
    const record: Record<string, unknown> = {
      id: uuidFrom(rand),
      score: Math.round(rand() * 500) / 100,
      campaign: { id: c.id, name: c.name },
      user: this.person(rand),
      session: { id: uuidFrom(rand) },
      scenario: this.scenario(rand),
      eval_results: this.evalResults(rand, this.evaluatedFrom(i, created)),
      feedback: rand() < 0.2 ? null : this.feedback(rand),
    };
    const extra = this.additionalScores(rand);
    if (extra !== undefined) record.additional_scores = extra;
    record.created_at = iso(created);
    record.updated_at = this.updatedAt(c, i, created, Math.floor(rand() * 3_600_000));
    record.order_index = this.orderIndexValue(c, i);
    return record;
  }

  /** A role result record: §2.4 (OVERALL) or §2.5 (DETAILED, with score_details). */
  roleResult(c: SimCampaign, i: number, report: ReportType, created = this.createdAt(i)): Record<string, unknown> {
    const rand = prng(hash32(this.opts.seed, c.index, i, 0x70));
    const user = this.person(rand);
    const overall = Math.round(rand() * 500) / 100;
    const record: Record<string, unknown> = {
      id: uuidFrom(rand),
      recommendation_status:
        overall >= 4 ? RECOMMENDATION_STATUSES[2] : overall >= 2.5 ? RECOMMENDATION_STATUSES[1] : RECOMMENDATION_STATUSES[0],
      campaign: { id: c.id, name: c.name },
      user,
      overall_score: overall,
    };
    const extra = this.additionalScores(rand);
    if (extra !== undefined) record.additional_scores = extra;
    record.created_at = iso(created);
    record.updated_at = this.updatedAt(c, i, created, 60_000);
    record.order_index = this.orderIndexValue(c, i);
    if (report === 'DETAILED') {
      // Drawn after the OVERALL fields so both reports of a record agree on those.
      const n = 1 + Math.floor(rand() * 4);
      const details = [];
      for (let k = 0; k < n; k++) {
        const at = created - (n - k) * 1_800_000;
        details.push({
          id: uuidFrom(rand),
          user: { email: user.email, id: user.id },
          scenario: this.scenario(rand),
          session: { id: uuidFrom(rand) },
          score: Math.round(rand() * 500) / 100,
          eval_results: this.evalResults(rand, at),
          feedback: rand() < 0.85 ? null : this.feedback(rand),
          created_at: isoNoZone(at),
          updated_at: isoNoZone(at + 120_000),
        });
      }
      record.score_details = details;
    }
    return record;
  }
}
