/**
 * The erasure plan: what `forget --user`, `forget --older-than` and a retention do to each row a
 * backend reads, decided here once for every store (SQLite's tables and NDJSON lines, PostgreSQL's
 * tables). A backend reads its rows and writes what the plan answers for each: delete it, rewrite it
 * (a text with its new text; a result's or score detail's row with the values rows.ts makes of its
 * new text, every column), or keep it. Whom and what: store/model/erase-rule.ts (the rule) and
 * store/model/person.ts (who is who).
 *
 * A backend asks in this order, because later answers depend on earlier ones: the results (session
 * and role), then their score details (a detail under a result that goes is deleted with it, by the
 * backend, and kept here), then the past versions and the tables of copies (those of a removed
 * result go with it). The quarantine, the streams' error texts and NDJSON lines at any time. Each
 * `reads…` says whether the plan needs a kind of row at all, so a backend reads no more than that.
 */
import { type ErasedCounts, errorsWithout, type StoredError } from '../../core/email.js';
import { toJson } from '../../core/json.js';
import { streamId } from '../../core/types.js';
import { type EraseRule, innerRule, instant, judge, recordTime } from './erase-rule.js';
import { type KnownPerson, quarantinedNames } from './person.js';
import { detailValues, roleRow, sessionRow, type Values } from './rows.js';

type Obj = Record<string, unknown>;

/** What happens to one stored row. */
export type Fate<Rewrite> = { do: 'delete' } | { do: 'keep' } | ({ do: 'rewrite' } & Rewrite);
/** A result's or score detail's row; rewritten, its values in its table's COLUMNS order, the key last (rows.ts). */
export type RowFate = Fate<{ values: Values }>;
/** A stored text (a past version, a copy, an NDJSON line); rewritten, its new text. */
export type TextFate = Fate<{ text: string }>;

const DELETE = Object.freeze({ do: 'delete' as const });
const KEEP = Object.freeze({ do: 'keep' as const });

/** A row's own person columns. */
interface PersonColumns {
  user_id: string | null;
  user_email: string | null;
}

/** A session result's row as a backend reads it beside its text. */
export interface StoredSession extends PersonColumns {
  id: string;
  campaign_id: string;
  order_index: bigint | number | string | null;
}

/** A role result's row. */
export interface StoredRole extends StoredSession {
  report_type: string | null;
}

/** A score detail's row. */
export interface StoredDetail extends PersonColumns {
  id: string;
  campaign_id: string;
  role_result_id: string;
  position: number | bigint | null;
}

/** A past version's row (its text: the record as it was, none for a deletion). */
export interface StoredVersion extends PersonColumns {
  kind: string;
  id: string;
}

/** A row of a table of copies (store/model/erase-tables.ts): the id of its record and when it was stored. */
export interface StoredCopy {
  record_id: unknown;
  stored: unknown;
}

const columnsOf = (row: PersonColumns) => ({ user_id: row.user_id, user_email: row.user_email });

/** The person's past versions as a backend reads them: every version of a record of theirs goes, others' are kept without them. */
export interface VersionsPlan<R extends StoredVersion> {
  add(row: R, record: unknown): void;
  /** Once every version was added: the records whose every version goes, and the versions rewritten without the person. */
  done(): { records: Array<{ kind: string; id: string }>; rewrite: Array<{ row: R; text: string }> };
}

/** Why a result left the mirror, as a `--since-last` deletion row says it (`pruned`: reconcile --prune). */
export type DeletionReason = 'erased' | 'retention' | 'pruned';

export class ErasurePlan {
  private readonly removed = { session: new Set<string>(), role: new Set<string>() };
  /** Results kept without the person's part, their own text or a score detail of theirs: changes every consumer is given again. */
  private readonly rewritten = { session: new Set<string>(), role: new Set<string>() };
  private readonly streams = new Map<string, number>();

  private constructor(
    /** Whom and what it erases. */
    readonly rule: EraseRule,
    /** What forget was given and every id and e-mail of the person: matched in texts (error texts, the quarantine). */
    private readonly terms: readonly string[],
    /** The person in clear, for an erasure that starts now (SQLite keeps them as digests in its mark). */
    readonly person: KnownPerson | undefined,
  ) {}

  /** `forget --user`: the person PersonGraph found for `asked`, what forget was given. */
  static forPerson(asked: string, person: KnownPerson): ErasurePlan {
    return new ErasurePlan({ person }, [asked, ...person.ids, ...person.emails], person);
  }

  /** `forget --older-than` and a retention: the results dated before `before` (ms since the epoch). */
  static olderThan(before: number): ErasurePlan {
    return new ErasurePlan({ before }, [], undefined);
  }

  /** An erasure known by its rule alone (an unfinished one's mark: what forget was given is not kept). */
  static ofRule(rule: EraseRule): ErasurePlan {
    return new ErasurePlan(rule, [], undefined);
  }

  /** What a deletion row of this erasure says: a person's erasure, or a cut by date (`forget --older-than`, a retention). */
  get reason(): DeletionReason {
    return this.rule.person !== undefined ? 'erased' : 'retention';
  }

  /** Score details are judged by themselves only for a person (their own date is not the assessment's). */
  get readsDetails(): boolean {
    return this.rule.person !== undefined;
  }

  /** A person's past versions go by who they name; a cut's are copies, dated (readsCopies). */
  get readsVersions(): boolean {
    return this.rule.person !== undefined;
  }

  /** The tables of copies are walked by date for a cut; a person's are their versions and the quarantine's match. */
  get readsCopies(): boolean {
    return this.rule.before !== undefined;
  }

  /** The quarantine is matched against the person (its records may not parse). */
  get readsQuarantine(): boolean {
    return this.rule.person !== undefined;
  }

  /** A service's error text may quote the person. */
  get readsErrors(): boolean {
    return this.terms.length > 0;
  }

  /** A session result: it goes whole (its eval results with it), is rewritten without the person, or stays. */
  session(row: StoredSession, record: unknown): RowFate {
    const s = judge(record, this.rule, columnsOf(row));
    if (s.kind === 'none') return KEEP;
    if (s.kind === 'whole') return this.remove('session', row.id, streamId(row.campaign_id, 'session', null).key);
    const value = s.value as Obj;
    const raw = toJson(value);
    this.rewritten.session.add(row.id);
    return {
      do: 'rewrite',
      values: sessionRow({ record: value, id: row.id, orderIndex: BigInt(row.order_index ?? 0), raw }, row.campaign_id),
    };
  }

  /** A role result: it goes whole (its score details and their eval results with it), is rewritten without the person, or stays. */
  role(row: StoredRole, record: unknown): RowFate {
    const s = judge(record, this.rule, columnsOf(row));
    if (s.kind === 'none') return KEEP;
    if (s.kind === 'whole') return this.remove('role', row.id, streamId(row.campaign_id, 'role', row.report_type).key);
    const value = s.value as Obj;
    const raw = toJson(value);
    const r = { record: value, id: row.id, orderIndex: BigInt(row.order_index ?? 0), raw };
    this.rewritten.role.add(row.id);
    return { do: 'rewrite', values: roleRow(r, row.campaign_id, row.report_type ?? '', raw) };
  }

  /**
   * A score detail (after every result): the person's goes, others' holding them are rewritten
   * without them. One under a result that goes is kept here: the backend deletes it with its result.
   */
  detail(row: StoredDetail, record: unknown): RowFate {
    if (!this.readsDetails || this.removed.role.has(row.role_result_id)) return KEEP;
    const s = judge(record, innerRule(this.rule), columnsOf(row));
    if (s.kind === 'none') return KEEP;
    // Its result is kept without it (or with it rewritten): the result changed.
    this.rewritten.role.add(row.role_result_id);
    if (s.kind === 'whole') return DELETE;
    const value = s.value as Obj;
    return { do: 'rewrite', values: detailValues(row.role_result_id, row.campaign_id, value, toJson(value), Number(row.position ?? 0)) };
  }

  /** The streams whose results went, each with how many (their record counts drop by as many). */
  removedStreams(): ReadonlyMap<string, number> {
    return this.streams;
  }

  /** The results that went, by kind: each a deletion row for the consumers of `export --since-last`. */
  removedResults(): { session: string[]; role: string[] } {
    return { session: [...this.removed.session], role: [...this.removed.role] };
  }

  /**
   * The results kept without the person (their text rewritten, or a score detail of theirs removed
   * or rewritten), by kind: each takes a new change number, so every consumer is given it again whole
   * and no copy downstream keeps the person inside another's record. Counted as `records_changed`.
   */
  rewrittenResults(): { session: string[]; role: string[] } {
    return { session: [...this.rewritten.session], role: [...this.rewritten.role] };
  }

  /** The records whose drift examples become ERASED_EXAMPLE (store/model/drift.ts): every result that went. */
  examplesErased(): string[] {
    return [...this.removed.session, ...this.removed.role];
  }

  /**
   * The person's past versions (after every result): every version of a record that names them at
   * its top in any version, or whose current row went, is deleted; a version of another's record
   * that holds them is kept without them, as the current rows are.
   */
  versions<R extends StoredVersion>(): VersionsPlan<R> {
    const person = this.rule.person;
    const key = (kind: string, id: string) => `${kind}\u0000${id}`;
    const theirs = new Set([
      ...[...this.removed.session].map((id) => key('session', id)),
      ...[...this.removed.role].map((id) => key('role', id)),
    ]);
    const part: Array<{ row: R; text: string }> = [];
    return {
      add(row, record) {
        if (person === undefined) return;
        const s = judge(record, { person }, columnsOf(row));
        if (s.kind === 'whole') theirs.add(key(row.kind, row.id));
        else if (s.kind === 'part') part.push({ row, text: toJson(s.value) });
      },
      done() {
        const records = [...theirs].map((k) => {
          const [kind, id] = k.split('\u0000') as [string, string];
          return { kind, id };
        });
        return { records, rewrite: part.filter((p) => !theirs.has(key(p.row.kind, p.row.id))) };
      },
    };
  }

  /**
   * A row of a table of copies, for a cut (after every result): it goes with its record, or when its
   * text is dated before the cut; a text that says no date is dated by when the mirror stored it.
   */
  copy(row: StoredCopy, value: unknown): TextFate {
    const before = this.rule.before;
    if (before === undefined) return KEEP;
    const id = row.record_id === null || row.record_id === undefined ? undefined : String(row.record_id);
    if (id !== undefined && (this.removed.session.has(id) || this.removed.role.has(id))) return DELETE;
    const stored = instant(row.stored);
    if (recordTime(value) === undefined && stored !== undefined && stored < before) return DELETE;
    return this.textFate(judge(value, { before }));
  }

  /**
   * A quarantined record's text, for a person: it goes whole when it names them, parsed or by the
   * text as received (store/model/person.ts quarantinedNames); otherwise it stays.
   */
  quarantined(raw: string): TextFate {
    const person = this.rule.person;
    return person !== undefined && quarantinedNames(raw, person, this.terms) ? DELETE : KEEP;
  }

  /** The streams' stored errors that quote the person, with the text each is to be stored as now; the others stay. */
  errorTexts(rows: readonly StoredError[]): StoredError[] {
    return this.readsErrors ? errorsWithout(rows, this.terms) : [];
  }

  /** A line of an NDJSON file (its record parsed, undefined when it is not JSON). */
  line(record: unknown): TextFate {
    return this.textFate(judge(record, this.rule));
  }

  private textFate(s: ReturnType<typeof judge>): TextFate {
    if (s.kind === 'whole') return DELETE;
    if (s.kind === 'part') return { do: 'rewrite', text: toJson(s.value) };
    return KEEP;
  }

  private remove(kind: 'session' | 'role', id: string, stream: string): RowFate {
    this.removed[kind].add(id);
    this.streams.set(stream, (this.streams.get(stream) ?? 0) + 1);
    return DELETE;
  }
}

/**
 * Whether an erasure found anything: a row removed or rewritten, a copy removed (a past version among
 * them), an error text scrubbed, a file rewritten. Eval results go only with the rows counted here.
 */
export function foundAny(rows: ErasedCounts, copies: Readonly<Record<string, number>>, files = 0): boolean {
  const copied = Object.values(copies).reduce((a, b) => a + b, 0);
  return rows.session_results + rows.role_results + rows.score_details + rows.records_changed + rows.error_texts + copied + files > 0;
}
