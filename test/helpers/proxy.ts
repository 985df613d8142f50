/** Starts test/helpers/forward-proxy.mjs as a child process and collects what it proxied. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { atFileEnd } from './file-end.js';

export interface ProxyLine {
  kind: 'connect' | 'forward';
  /** Where the proxy connected: PROXIED_HOST as 127.0.0.1. */
  target: string;
  /** What the client asked for (`host:port`). */
  asked: string;
  authorization: boolean;
}

/**
 * A loopback base URL never goes through a proxy (api/dispatcher.ts), so proxy tests give the
 * simulator this made-up name instead: only the test proxy knows it (as 127.0.0.1). The client must
 * never look it up itself (a DNS query for a made-up name): check `proxyFor` before running it.
 */
export const PROXIED_HOST = 'sim.campaign-sync.test';

/** `url` with its host replaced by PROXIED_HOST (same scheme, port and path). */
export function viaProxyName(url: string): string {
  const u = new URL(url);
  u.hostname = PROXIED_HOST;
  return u.toString().replace(/\/$/, '');
}

export interface RunningProxy {
  url: string;
  /** What it proxied, as far as its lines have arrived: `await settled()` before reading it. */
  seen: ProxyLine[];
  /** Resolves once `seen` holds every request the proxy answered before the call (its lines come through a pipe). */
  settled(): Promise<void>;
  /** Stops the proxy; resolves once its process has exited (its port refuses connections from then on). */
  stop(): Promise<void>;
}

const running: RunningProxy[] = [];
atFileEnd(() => {
  return Promise.all(running.splice(0).map((p) => p.stop()));
});

export function startProxy(mode: 'ok' | 'refuse' | 'auth' = 'ok'): Promise<RunningProxy> {
  const script = fileURLToPath(new URL('./forward-proxy.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, mode, PROXIED_HOST], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  const seen: ProxyLine[] = [];
  const waiting: Array<() => void> = [];
  let buffered = '';
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`forward proxy exited (${code})`)));
    child.stdout.on('data', (d) => {
      buffered += d;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = JSON.parse(buffered.slice(0, nl)) as ProxyLine & { port?: number; synced?: boolean };
        buffered = buffered.slice(nl + 1);
        if (line.synced) {
          waiting.shift()?.();
          continue;
        }
        if (line.port === undefined) {
          seen.push(line);
          continue;
        }
        const settled = () =>
          new Promise<void>((done) => {
            waiting.push(done);
            child.stdin?.write('\n');
          });
        const proxy = { url: `http://127.0.0.1:${line.port}`, seen, settled, stop };
        running.push(proxy);
        resolve(proxy);
      }
    });
  });
}
