/**
 * Whether NODE_EXTRA_CA_CERTS can do its job. Node reads the file before any JavaScript runs and
 * either prints a line of its own that no listener can catch (a missing file, a certificate that does
 * not parse) or says nothing at all (a folder, a file with no certificate in it). Either way the
 * private CA is not trusted and the pull fails later with a certificate error, far from the cause;
 * this names the cause first. Only read when the variable is set.
 */
import { readFileSync } from 'node:fs';
import { ENV } from './env.js';

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'is a folder, not a file',
  EACCES: 'cannot be read (permission denied)',
  EPERM: 'cannot be read (operation not permitted)',
};

/** What is wrong with the file NODE_EXTRA_CA_CERTS names, as one line; undefined when it is usable or unset. */
export async function extraCaCertsProblem(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const file = env[ENV.extraCaCerts.name];
  if (!file) return undefined;
  const named = `${ENV.extraCaCerts.name}=${file}`;
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    return `${named}: ${READ_ERRORS[code] ?? `cannot be read (${code || (err as Error).message})`}: Node trusts nothing from it`;
  }
  const blocks = text.match(BLOCK) ?? [];
  if (blocks.length === 0) return `${named} holds no PEM certificate (-----BEGIN CERTIFICATE-----): Node trusts nothing from it`;
  const { X509Certificate } = await import('node:crypto');
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch {
      // Node keeps the certificates before the first bad one, and drops it and every one after it.
      const kept = i === 0 ? 'Node trusts nothing from it' : `Node trusts only the first ${i}`;
      return `${named}: certificate ${i + 1} of ${blocks.length} cannot be read: ${kept}`;
    }
  }
  return undefined;
}
