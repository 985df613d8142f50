/** A self-signed certificate and its key, made by the openssl CLI (tests that call it check for it: helpers/tools.ts), for TLS tests on loopback. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './index.js';

/**
 * Writes `cert.pem` and `key.pem` (RSA 2048, CN=localhost) into a fresh temporary folder and returns
 * their paths. `altNames` are subjectAltName entries (`IP:127.0.0.1`, `DNS:localhost`), for a client
 * that checks the name.
 */
export function selfSigned(altNames: string[] = []): { cert: string; key: string } {
  const dir = tempDir();
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost'];
  if (altNames.length > 0) args.push('-addext', `subjectAltName=${altNames.join(',')}`);
  execFileSync('openssl', args, { stdio: 'ignore' });
  return { cert, key };
}
