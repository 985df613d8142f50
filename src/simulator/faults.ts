import { UsageError } from '../errors.js';

export const FAULT_KINDS = ['500', '503', '429', 'reset', 'slow', 'truncate'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** Share of requests (0..1) that get each fault. */
export type FaultPlan = Partial<Record<FaultKind, number>>;

/**
 * Parses `--faults`: either one share spread evenly over every kind (`0.2` or `20%`), or a list of
 * `kind=share` (`500=0.05,reset=0.02,slow=0.1`). Kinds: 500, 503, 429, reset, slow, truncate.
 */
export function parseFaults(text: string): FaultPlan {
  const share = (s: string): number => {
    // Decimal only: Number() reads '' as 0 (so `500=` was a silent 0) and accepts 0x1 or 1e-1.
    const ok = /^(\d+(\.\d*)?|\.\d+)%?$/.test(s);
    const v = !ok ? Number.NaN : s.endsWith('%') ? Number(s.slice(0, -1)) / 100 : Number(s);
    if (!Number.isFinite(v) || v < 0 || v > 1) throw new UsageError(`--faults: "${s}" is not a share from 0 to 1 (or 0% to 100%)`);
    return v;
  };
  const plan: FaultPlan = {};
  if (!text.includes('=')) {
    const each = share(text.trim()) / FAULT_KINDS.length;
    for (const kind of FAULT_KINDS) plan[kind] = each;
    return plan;
  }
  for (const part of text.split(',')) {
    const pieces = part.split('=').map((s) => s.trim());
    const [kind, value] = pieces;
    if (!FAULT_KINDS.includes(kind as FaultKind) || value === undefined || pieces.length > 2) {
      throw new UsageError(`--faults: "${part}" should be kind=share with kind one of ${FAULT_KINDS.join(', ')}`);
    }
    // Which of two shares was meant is a guess: a repeated kind is refused, not summed or overwritten.
    if (plan[kind as FaultKind] !== undefined) throw new UsageError(`--faults: ${kind} is given twice`);
    plan[kind as FaultKind] = share(value);
  }
  const total = Object.values(plan).reduce((a, b) => a + b, 0);
  if (total > 1) throw new UsageError('--faults: the shares add up to more than 1');
  return plan;
}

/** Picks the fault (if any) for a draw in [0, 1). */
export function chooseFault(plan: FaultPlan, draw: number): FaultKind | undefined {
  let acc = 0;
  for (const kind of FAULT_KINDS) {
    acc += plan[kind] ?? 0;
    if (draw < acc) return kind;
  }
  return undefined;
}
