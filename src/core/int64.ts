/** int64, the type of `order_index` and of every cursor: kept as bigint past 2^53, never rounded. */

export const INT64_MAX = 2n ** 63n - 1n;
export const INT64_MIN = -(2n ** 63n);

/** Reads an int64 cursor value given as a JSON number, a bigint or a decimal string; undefined if unusable (or negative). */
export function toInt64(value: unknown): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  if (typeof value === 'bigint') return value >= 0n && value <= INT64_MAX ? value : undefined;
  if (typeof value === 'string' && /^\d{1,19}$/.test(value)) {
    const v = BigInt(value);
    return v <= INT64_MAX ? v : undefined;
  }
  return undefined;
}
