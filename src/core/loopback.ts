/** Which hosts are this machine for certain: the rule for plain http (config/) and for proxies (api/). */
import { isIP } from 'node:net';

/**
 * True for 127.0.0.0/8, ::1 and localhost: the only hosts plain http is allowed to by default, and
 * never sent through a proxy. Not `*.localhost`: with nsswitch `files dns` such a name goes to the
 * resolver, which may answer with a remote address, and the key would travel unencrypted.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}
