/**
 * Whether NODE_EXTRA_CA_CERTS can do its job. Node reads the file before any JavaScript runs and
 * either prints a line of its own that no listener can catch (a missing file, a certificate that does
 * not parse: Node then keeps the ones before it) or says nothing at all (a folder, a file with no
 * certificate in it). Either way the private CA is not trusted and the pull fails later with a
 * certificate error, far from the cause; this names the cause first. Only read when the variable is
 * set, and kept cheap: it runs at every start, and the variable often names the system's whole bundle
 * (/etc/ssl/certs/ca-certificates.crt), and parsing each certificate again is a cost at every start
 * (docs/performance.md); a certificate that does not parse is the one case Node reports itself.
 */

import { readFileSync } from 'node:fs';
import { currentIo } from '../core/io.js';
import { ENV } from './env.js';

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'is a folder, not a file',
  EACCES: 'cannot be read (permission denied)',
  EPERM: 'cannot be read (operation not permitted)',
};

/** What is wrong with the file NODE_EXTRA_CA_CERTS names, as one line; undefined when it is usable or unset. */
export function extraCaCertsProblem(env: NodeJS.ProcessEnv = currentIo().env): string | undefined {
  const file = env[ENV.extraCaCerts.name];
  if (!file) return undefined;
  const named = `${ENV.extraCaCerts.name}=${file}`;
  let bytes: Buffer;
  try {
    // Searched as bytes: the system's whole bundle is not decoded to a string at every start.
    bytes = readFileSync(file);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    return `${named}: ${READ_ERRORS[code] ?? `cannot be read (${code || (err as Error).message})`}: Node trusts nothing from it`;
  }
  if (!bytes.includes('-----BEGIN CERTIFICATE-----')) {
    return `${named} holds no PEM certificate (-----BEGIN CERTIFICATE-----): Node trusts nothing from it`;
  }
  return undefined;
}
