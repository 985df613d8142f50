/**
 * Drift: the field paths and enumeration values a stream's records carry, compared with what its
 * earlier passes saw (kept by the store with each page: core/drift.ts).
 *
 * A field path is an object key's place in a record, with array elements collapsed:
 * `score_details[].eval_results[].skill.key`. Enumeration values are recorded only at the places the
 * spec names (ENUM_AT): `recommendation_status`, skill keys, scenario type keys, and a record's own
 * `report_type` if it carries one. Nothing else of a record's values is kept, so no e-mail or other
 * personal value becomes a path or a value: a key that is not an identifier counts as `*` (a map's
 * keys), a value that is not a short key-like word as `(other)`, and past MAX_KEYS keys of one object
 * or MAX_VALUES values of one enumeration, the rest count as those too.
 *
 * Hot path: one walk of each record through a tree of the paths seen (a Map lookup per key, no string
 * built unless a path is new), each node stamped with the walk that saw it last.
 */
import type { ContractMode, DriftItem, DriftKind, DriftPage, KnownDrift } from '../core/drift.js';
import { NumberText } from '../core/json.js';
import type { CheckedRecord, StreamId } from '../core/types.js';
import { DataError } from '../errors.js';

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const ENUM_VALUE = /^[A-Za-z0-9_-]{1,64}$/;
const MAP_KEY = '*';
const OTHER = '(other)';
const MAX_KEYS = 100;
const MAX_VALUES = 100;
/** Deeper than any record of the spec: a deeper value is not walked. */
const MAX_DEPTH = 12;

/** The paths whose string values are enumeration values, and of which enumeration. */
const ENUM_AT: Readonly<Record<string, DriftKind>> = {
  recommendation_status: 'recommendation_status',
  report_type: 'report_type',
  scenario_type: 'scenario_type',
  'scenario.type': 'scenario_type',
  'scenario.type.key': 'scenario_type',
  'score_details[].scenario.type': 'scenario_type',
  'score_details[].scenario.type.key': 'scenario_type',
  'eval_results[].skill.key': 'skill',
  'score_details[].eval_results[].skill.key': 'skill',
  'feedback.improvement_criteria[].skill': 'skill',
  'score_details[].feedback.improvement_criteria[].skill': 'skill',
};

interface Seen {
  /** The last walk that saw it. */
  stamp: number;
  /** Stored, or recorded by this pass. */
  known: boolean;
  /** Carried by the last full read (a known path the last full read missed is not). */
  present: boolean;
}

class Node implements Seen {
  readonly keys = new Map<string, Node>();
  /** The keys of the last object walked here, in order, and their nodes: most objects of a place share them. */
  shape: string[] = [];
  kids: Node[] = [];
  items: Node | undefined;
  readonly kind: DriftKind | undefined;
  stamp = 0;
  known = false;
  present = false;
  constructor(readonly path: string) {
    this.kind = ENUM_AT[path];
  }
}

interface Value extends Seen {
  value: string;
}

/** One stream's drift during one pass: what its store knew at the start, and what the pass saw. */
export class StreamDrift {
  private readonly root = new Node('');
  private readonly fields: Node[] = [];
  private readonly values = new Map<DriftKind, Map<string, Value>>();
  /** Whether an earlier pass recorded the stream: only then is anything new reported (or refused). */
  readonly baseline: boolean;
  private stamp = 1;
  private fresh: DriftItem[] = [];
  private unexpected: DriftItem | undefined;
  private recordId = '';

  constructor(
    readonly id: StreamId,
    known: readonly KnownDrift[],
    private readonly mode: ContractMode,
  ) {
    this.baseline = known.length > 0;
    for (const k of known) {
      const seen = k.kind === 'field' ? this.nodeAt(k.value) : this.valueOf(k.kind, k.value);
      seen.known = true;
      seen.present = k.present;
    }
  }

  /** Starts a walk over the stream's pages (what gone() judges is the last walk). */
  begin(): void {
    this.stamp++;
  }

  /**
   * The page's paths and values new to the stream (or back after they disappeared), to be written with
   * the page; undefined when none. Under --contract strict, a path or value never seen before in a
   * stream with a baseline throws a DataError (exit 4) before anything of the page is written.
   */
  page(records: readonly CheckedRecord[]): DriftPage | undefined {
    this.fresh = [];
    this.unexpected = undefined;
    for (const r of records) {
      this.recordId = r.id;
      this.walkObject(r.record, this.root, 0);
    }
    const u = this.unexpected as DriftItem | undefined;
    if (u !== undefined && this.mode === 'strict' && this.baseline) {
      const more = this.fresh.length > 1 ? ` (and ${this.fresh.length - 1} more new)` : '';
      const what = u.kind === 'field' ? `a new field ${u.value}` : `a new ${u.kind} value ${u.value}`;
      throw new DataError(
        `stream ${this.id.key}: record ${JSON.stringify(u.recordId)} brings ${what}${more}; --contract strict: nothing of this page was stored`,
      );
    }
    return this.fresh.length === 0 ? undefined : { items: this.fresh, report: this.baseline };
  }

  /**
   * After a full read of the stream that read records: the known paths and values no record of it
   * carried (they disappeared), marked so. Anything else reads too little of a stream to say.
   */
  gone(): KnownDrift[] {
    const out: KnownDrift[] = [];
    const check = (kind: DriftKind, value: string, s: Seen) => {
      if (!s.known || !s.present || s.stamp === this.stamp) return;
      s.present = false;
      out.push({ kind, value, present: false });
    };
    for (const n of this.fields) check('field', n.path, n);
    for (const [kind, map] of this.values) for (const v of map.values()) check(kind, v.value, v);
    return out;
  }

  private walkObject(obj: Record<string, unknown>, node: Node, depth: number): void {
    const shape = node.shape;
    let i = 0;
    for (const k in obj) {
      // The same key at the same position as in the last object here: no hash lookup.
      let child = node.kids[i] as Node;
      if (shape[i] !== k) {
        child = node.keys.get(k) ?? this.child(node, k);
        if (i < MAX_KEYS) {
          shape[i] = k;
          node.kids[i] = child;
        }
      }
      i++;
      if (child.stamp !== this.stamp) this.see('field', child.path, child);
      const v = obj[k];
      if (v !== null && typeof v === 'object') {
        if (depth < MAX_DEPTH) this.walkValue(v, child, depth + 1);
      } else if (child.kind !== undefined && typeof v === 'string') this.enumValue(child.kind, v);
    }
  }

  private walkValue(v: object, node: Node, depth: number): void {
    if (Array.isArray(v)) {
      node.items ??= new Node(`${node.path}[]`);
      const items = node.items;
      for (const el of v) {
        if (el !== null && typeof el === 'object') {
          if (depth < MAX_DEPTH) this.walkValue(el, items, depth + 1);
        } else if (items.kind !== undefined && typeof el === 'string') this.enumValue(items.kind, el);
      }
    } else if (!(v instanceof NumberText)) this.walkObject(v as Record<string, unknown>, node, depth);
  }

  /** The child of `node` for key `k`: a key that is no identifier, or one past MAX_KEYS, is `*`. */
  private child(node: Node, k: string): Node {
    const name = FIELD_NAME.test(k) && (node.keys.size < MAX_KEYS || node.keys.has(k)) ? k : MAP_KEY;
    let child = node.keys.get(name);
    if (child === undefined) {
      child = new Node(node.path === '' ? name : `${node.path}.${name}`);
      node.keys.set(name, child);
      this.fields.push(child);
    }
    return child;
  }

  private enumValue(kind: DriftKind, v: string): void {
    let map = this.values.get(kind);
    if (map === undefined) this.values.set(kind, (map = new Map()));
    const entry = map.get(v) ?? this.valueOf(kind, v);
    if (entry.stamp !== this.stamp) this.see(kind, entry.value, entry);
  }

  /** The entry of value `v` (a value that is no key-like word, or one past MAX_VALUES, is `(other)`). */
  private valueOf(kind: DriftKind, v: string): Value {
    let map = this.values.get(kind);
    if (map === undefined) this.values.set(kind, (map = new Map()));
    const name = ENUM_VALUE.test(v) && (map.size < MAX_VALUES || map.has(v)) ? v : OTHER;
    let entry = map.get(name);
    if (entry === undefined) {
      entry = { value: name, stamp: 0, known: false, present: false };
      map.set(name, entry);
    }
    return entry;
  }

  /** A path as stored (`a.b[].c`), found or made in the tree. */
  private nodeAt(path: string): Node {
    let node = this.root;
    for (const segment of path.split('.')) {
      const name = segment.replace(/(\[\])+$/, '');
      node = node.keys.get(name) ?? this.child(node, name);
      for (let i = name.length; i < segment.length; i += 2) node = node.items ??= new Node(`${node.path}[]`);
    }
    return node;
  }

  private see(kind: DriftKind, value: string, s: Seen): void {
    s.stamp = this.stamp;
    if (s.known && s.present) return;
    const item = { kind, value, recordId: this.recordId };
    if (!s.known) this.unexpected ??= item;
    s.known = true;
    s.present = true;
    this.fresh.push(item);
  }
}

/** Where the tracker reads what a stream's store knows (store/port.ts JobStore.driftKnown). */
export type KnownOf = (stream: string) => Promise<KnownDrift[]>;

/** Opens each stream's drift for a pass, from what its store knows. */
export class DriftTracker {
  constructor(
    private readonly known: KnownOf,
    readonly mode: ContractMode,
  ) {}

  async open(id: StreamId): Promise<StreamDrift> {
    return new StreamDrift(id, await this.known(id.key), this.mode);
  }
}
