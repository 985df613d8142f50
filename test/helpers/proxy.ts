/** Starts test/helpers/forward-proxy.mjs as a child process and collects what it proxied. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { atFileEnd } from './file-end.js';

export interface ProxyLine {
  kind: 'connect' | 'forward';
  target: string;
  authorization: boolean;
}

export interface RunningProxy {
  url: string;
  seen: ProxyLine[];
  stop(): void;
}

const running: RunningProxy[] = [];
atFileEnd(() => {
  for (const p of running.splice(0)) p.stop();
});

export function startProxy(mode: 'ok' | 'refuse' | 'auth' = 'ok'): Promise<RunningProxy> {
  const script = fileURLToPath(new URL('./forward-proxy.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const seen: ProxyLine[] = [];
  let buffered = '';
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`forward proxy exited (${code})`)));
    child.stdout.on('data', (d) => {
      buffered += d;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = JSON.parse(buffered.slice(0, nl)) as ProxyLine & { port?: number };
        buffered = buffered.slice(nl + 1);
        if (line.port === undefined) {
          seen.push(line);
          continue;
        }
        const proxy = { url: `http://127.0.0.1:${line.port}`, seen, stop: () => child.kill('SIGTERM') };
        running.push(proxy);
        resolve(proxy);
      }
    });
  });
}
