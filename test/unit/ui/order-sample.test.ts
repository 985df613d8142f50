/**
 * status's order of names (ui/order.ts) is localeCompare's in every locale, over a sample of the
 * soak's corpus (test/soak/ui/order.test.ts): every class of character the code-point path orders (space,
 * `-`, `/`, digits, letters) and those it leaves to localeCompare (upper case, `_`, `é`), with
 * each locale's own rule (Danish `aa`, Estonian `z`, Lithuanian `y`, Czech `ch`).
 */
import { describe, expect, it } from 'vitest';
import { checkOrder, LOCALES } from '../../helpers/name-order.js';

const PARTS = ['a', 'aa', 'z', 's', 'y', 'i', 'ch', 'h', '0', '10', '-', ' ', 'A', '_', 'é'];

describe('the order of names, on a sample', () => {
  it.each<Record<string, string>>(LOCALES)('is localeCompare order with %o', (env) => {
    const r = checkOrder(env, PARTS);
    expect(r.pairs).toBeGreaterThan(100_000);
    expect(r.wrong, r.locale).toEqual([]);
  });
});
