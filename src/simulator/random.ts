/** Small deterministic helpers: every generated value is a pure function of (seed, coordinates). */

/** 32-bit FNV-1a style mix of a list of integers. */
export function hash32(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h ^= p & 0xffffffff;
    h = Math.imul(h, 0x01000193);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    h ^= h >>> 12;
  }
  return h >>> 0;
}

/** mulberry32: a fast seeded PRNG returning floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEX = '0123456789abcdef';

/** A version-4 UUID drawn from the generator. */
export function uuidFrom(rand: () => number): string {
  let out = '';
  for (let i = 0; i < 32; i++) {
    let d = Math.floor(rand() * 16);
    if (i === 12) d = 4;
    if (i === 16) d = 8 + (d & 3);
    out += HEX[d];
    if (i === 7 || i === 11 || i === 15 || i === 19) out += '-';
  }
  return out;
}

export function pickOne<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)] as T;
}

/** The seed as a 32-bit integer (any string or number is accepted). */
export function seedNumber(seed: string | number): number {
  const text = String(seed);
  let h = 0;
  for (let i = 0; i < text.length; i++) h = hash32(h, text.charCodeAt(i));
  return h;
}
