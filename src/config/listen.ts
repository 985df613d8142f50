/**
 * `--metrics-listen <host:port>`: where watch serves /metrics and /healthz. Loopback by
 * default; any other host needs `--metrics-allow-remote` (metrics name campaigns and errors, and
 * there is no authentication), else a usage error (exit 2).
 */

import { isLoopbackHost } from '../core/loopback.js';
import { UsageError } from '../errors.js';
import { parseIntIn } from './duration.js';

export interface ListenAddress {
  host: string;
  port: number;
}

/** `9464`, `:9464`, `127.0.0.1:9464`, `localhost:0`, `[::1]:9464`; a bare port listens on 127.0.0.1. */
export function parseListen(text: string, allowRemote: boolean): ListenAddress {
  const flag = '--metrics-listen';
  const t = text.trim();
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d+)$/.exec(t) ?? /^()()(\d+)$/.exec(t);
  if (!m) throw new UsageError(`${flag}: "${text}" is not host:port (e.g. 127.0.0.1:9464)`);
  const host = (m[1] || m[2] || '127.0.0.1').toLowerCase();
  const port = parseIntIn(m[3] as string, flag, 0, 65535);
  if (!isLoopbackHost(host) && !allowRemote)
    throw new UsageError(
      `${flag}: ${host} is not a loopback address; metrics have no authentication: add --metrics-allow-remote to serve them there`,
    );
  return { host, port };
}
