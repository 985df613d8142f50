/**
 * status's order of names (ui/order.ts) is localeCompare's, in every locale: checked in child
 * processes (ICU reads the locale once per process) over every pair of a corpus of plain and
 * not-so-plain names, where English and C take the code-point path and the others do not.
 * 6 million pairs in each of eight locales, ~20 s of CPU: a soak; test/unit/ui/order-sample.test.ts holds
 * a sample of the corpus to the same order in `npm test`.
 */
import { describe, expect, it } from 'vitest';
import { checkOrder, LOCALES } from '../../helpers/name-order.js';

const PARTS = [
  'a',
  'aa',
  'ab',
  'b',
  'z',
  's',
  't',
  'y',
  'i',
  'j',
  'ch',
  'h',
  '0',
  '9',
  '10',
  '-',
  '/',
  ' ',
  'A',
  'Z',
  '_',
  '.',
  'é',
  'role',
  'session',
];

describe('the order of names', () => {
  it.each<Record<string, string>>(LOCALES)('is localeCompare order with %o', (env) => {
    const r = checkOrder(env, PARTS);
    expect(r.pairs).toBeGreaterThan(100_000);
    expect(r.wrong, r.locale).toEqual([]);
  });
});
