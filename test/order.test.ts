/**
 * status's order of names (ui/order.ts) is localeCompare's, in every locale: checked in child
 * processes (ICU reads the locale once per process) over every pair of a corpus of plain and
 * not-so-plain names, where English and C take the code-point path and the others do not.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ORDER = fileURLToPath(new URL('../dist/ui/order.js', import.meta.url));

const SCRIPT = `
const { compareNames } = await import(${JSON.stringify(ORDER)});
const parts = ['a', 'aa', 'ab', 'b', 'z', 's', 't', 'y', 'i', 'j', 'ch', 'h', '0', '9', '10', '-', '/', ' ', 'A', 'Z', '_', '.', 'é', 'role', 'session'];
const names = [''];
for (const x of parts) for (const y of parts) names.push(x + y, x + '-' + y, x + '/' + y, x + ' ' + y);
names.push('role-2-trust-safety-reviewers', 'session-1-tecnicos-de-soporte', '0bdf4259-0830-4c8f-ac08-9819baf1f0a8/session', '0bdf4259-0830-4c8f-ac08-9819baf1f0a8/role/DETAILED');
let pairs = 0;
const wrong = [];
for (const a of names) for (const b of names) {
  pairs++;
  if (Math.sign(compareNames(a, b)) !== Math.sign(a.localeCompare(b))) wrong.push([a, b]);
}
console.log(JSON.stringify({ pairs, wrong: wrong.slice(0, 5), locale: Intl.Collator().resolvedOptions().locale }));`;

function check(env: Record<string, string | undefined>) {
  const clean = { ...process.env, LC_ALL: undefined, LC_MESSAGES: undefined, LANG: undefined, ...env };
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { env: clean, encoding: 'utf8' });
  return JSON.parse(out) as { pairs: number; wrong: string[][]; locale: string };
}

describe('the order of names', () => {
  it.each<Record<string, string>>([
    {},
    { LANG: 'C.UTF-8' },
    { LANG: 'en_US.UTF-8' },
    { LC_ALL: 'en_GB.UTF-8', LANG: 'da_DK.UTF-8' },
    { LANG: 'da_DK.UTF-8' },
    { LC_MESSAGES: 'et_EE.UTF-8', LANG: 'en_US.UTF-8' },
    { LANG: 'lt_LT.UTF-8' },
    { LANG: 'cs_CZ.UTF-8' },
  ])('is localeCompare order with %o', (env) => {
    const r = check(env);
    expect(r.pairs).toBeGreaterThan(100_000);
    expect(r.wrong, r.locale).toEqual([]);
  });
});
