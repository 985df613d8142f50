/**
 * core/redact.ts: every run of 8 or more of the key's characters (as sent, URL-encoded or
 * JSON-escaped, letters of any case) is taken out of a text, and nothing else; a key shorter than 8
 * is taken out whole; `shorten` only takes redacted text.
 */
import { describe, expect, it } from 'vitest';
import { KEY_MARK, redactJson, redactor, shorten } from '../../../src/core/redact.js';

const KEY40 = 'sk_live_Q7vR+xW2/mPz9KeT=bN4hLcY8dJf3Gs1';
const KEY64 = 'pk+9fT2c/Vw8qLr5Zx1Hn6Yb3Mk7Jd4Ps0Ge/Ua2Ri9Wo5Ct8Xv1Qe3Nm6Lz4K==';

/** The slow, obvious redaction: each character covered by a window of the key is marked; each run of marks becomes one mark. */
function reference(text: string, key: string): string {
  const forms = [key, encodeURIComponent(key), JSON.stringify(key).slice(1, -1)];
  const w = Math.min(8, ...forms.map((k) => k.length));
  const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  const windows = forms.flatMap((k) => Array.from({ length: Math.max(0, k.length - w + 1) }, (_, i) => fold(k.slice(i, i + w))));
  const covered = new Array<boolean>(text.length).fill(false);
  for (let i = 0; i + w <= text.length; i++) {
    if (windows.includes(fold(text.slice(i, i + w)))) covered.fill(true, i, i + w);
  }
  let out = '';
  for (let i = 0; i < text.length; i++) {
    if (!covered[i]) out += text[i];
    else if (i === 0 || !covered[i - 1]) out += KEY_MARK;
  }
  return out;
}

/** A pseudo-random generator with a seed: the same texts on every run. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** A text of filler and pieces of the key (some upper-cased, some URL-encoded), of every length. */
function textWithPieces(key: string, next: () => number): string {
  const filler = 'ab cd-0123 "x" é\n';
  let text = '';
  while (text.length < 300) {
    const from = Math.floor(next() * key.length);
    const len = 1 + Math.floor(next() * 14);
    let piece = key.slice(from, from + len);
    const r = next();
    if (r < 0.2) piece = piece.toUpperCase();
    else if (r < 0.35) piece = encodeURIComponent(piece);
    text += filler.slice(0, Math.floor(next() * filler.length)) + piece;
  }
  return text;
}

describe('redactor', () => {
  for (const key of [KEY40, KEY64]) {
    it(`takes out every run of 8 or more of a ${key.length}-character key's characters, and nothing else`, () => {
      const redact = redactor(key);
      const next = random(key.length);
      let marked = 0;
      for (let n = 0; n < 300; n++) {
        const text = textWithPieces(key, next);
        const out = redact(text);
        expect(out, text).toBe(reference(text, key));
        if (out !== text) marked++;
      }
      // Most texts held a run; some held only pieces too short to take out.
      expect(marked).toBeGreaterThan(200);
      expect(redact(`a ${key} b`)).toBe(`a ${KEY_MARK} b`);
      expect(redact(key.slice(3, 11))).toBe(KEY_MARK);
      expect(redact(key.slice(3, 10))).toBe(key.slice(3, 10));
      expect(redact(key.toUpperCase())).toBe(KEY_MARK);
      expect(redact(`?after=${encodeURIComponent(key)}&x=1`)).toBe(`?after=${KEY_MARK}&x=1`);
      // Cut to 40 (the quoting of a bad value), the key's first 39 characters: still taken out.
      expect(redact(JSON.stringify(key).slice(0, 40))).toBe(`"${KEY_MARK}`);
    });
  }

  it('takes a key shorter than 8 out whole, only whole', () => {
    const redact = redactor('abc12');
    expect(redact('x abc12 y ABC12 z abc1 abc')).toBe(`x ${KEY_MARK} y ${KEY_MARK} z abc1 abc`);
    expect(redact('abc12abc12')).toBe(KEY_MARK);
  });

  it('matches the JSON-escaped form of a key with a quote or backslash', () => {
    const key = 'q"uote\\back\\slash"key';
    const redact = redactor(key);
    expect(redact(JSON.stringify({ k: key }))).toBe(`{"k":"${KEY_MARK}"}`);
    expect(redact(`raw ${key}`)).toBe(`raw ${KEY_MARK}`);
  });

  it('leaves text alone for an empty key, and text shorter than a window', () => {
    expect(redactor('')('anything at all')).toBe('anything at all');
    expect(redactor(KEY40)('sk_live')).toBe('sk_live');
  });

  it('scans a long text once (a megabyte with the key at its end)', () => {
    const text = `${'lorem ipsum dolor sit amet '.repeat(40_000)}${KEY64}`;
    expect(redactor(KEY64)(text).endsWith(`amet ${KEY_MARK}`)).toBe(true);
  });
});

describe('shorten and redactJson', () => {
  it('cuts only redacted text', () => {
    const redact = redactor(KEY40);
    expect(shorten(redact(`"${KEY40}"`), 40)).toBe(`"${KEY_MARK}"`);
    expect(shorten(redact('x'.repeat(50)), 40)).toBe(`${'x'.repeat(40)}…`);
    // @ts-expect-error: text that has not been through a Redact cannot be cut.
    shorten('plain text', 40);
  });

  it('redacts every string of a JSON value, names of members included, and keeps a member called __proto__', () => {
    const redact = redactor(KEY40);
    const value = JSON.parse(`{"name":"${KEY40}","n":1,"list":[null,"${KEY40.slice(5)}"],"${KEY40}":true,"__proto__":{"x":"y"}}`);
    const out = redactJson(value, redact) as Record<string, unknown>;
    expect(JSON.stringify(out)).toBe(`{"name":"${KEY_MARK}","n":1,"list":[null,"${KEY_MARK}"],"${KEY_MARK}":true,"__proto__":{"x":"y"}}`);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});
