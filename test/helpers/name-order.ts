/**
 * Holds status's order of names (ui/order.ts) to localeCompare's over every pair of a corpus of
 * names, in a child process (ICU reads the locale once per process). The corpus is every join of two
 * of `parts` by nothing, `-`, `/` and a space.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ORDER = fileURLToPath(new URL('../../dist/ui/order.js', import.meta.url));

/** English and C take the code-point path; Danish, Estonian (by LC_MESSAGES), Lithuanian and Czech do not. */
export const LOCALES: Record<string, string>[] = [
  {},
  { LANG: 'C.UTF-8' },
  { LANG: 'en_US.UTF-8' },
  { LC_ALL: 'en_GB.UTF-8', LANG: 'da_DK.UTF-8' },
  { LANG: 'da_DK.UTF-8' },
  { LC_MESSAGES: 'et_EE.UTF-8', LANG: 'en_US.UTF-8' },
  { LANG: 'lt_LT.UTF-8' },
  { LANG: 'cs_CZ.UTF-8' },
];

const SCRIPT = `
const { compareNames } = await import(${JSON.stringify(ORDER)});
const parts = JSON.parse(process.argv[1]);
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

/** Compares every pair of the corpus of `parts` under the locale variables of `env`. */
export function checkOrder(env: Record<string, string | undefined>, parts: string[]) {
  const clean = { ...process.env, LC_ALL: undefined, LC_MESSAGES: undefined, LANG: undefined, ...env };
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT, JSON.stringify(parts)], {
    env: clean,
    encoding: 'utf8',
  });
  return JSON.parse(out) as { pairs: number; wrong: string[][]; locale: string };
}
