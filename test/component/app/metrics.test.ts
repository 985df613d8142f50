/**
 * watch --metrics-listen: Prometheus metrics and /healthz, scraped over HTTP after a pass;
 * port 0 works and the bound address is logged; a non-loopback host needs --metrics-allow-remote.
 */
import { describe, expect, it } from 'vitest';
import { parseListen } from '../../../src/config/listen.js';
import { sim, startCli, tempDir } from '../../helpers/index.js';
import { runCli } from '../../helpers/run-cli.js';

describe('--metrics-listen', () => {
  it('takes host:port, a bare port on loopback, and refuses another host without --metrics-allow-remote', () => {
    expect(parseListen('127.0.0.1:0', false)).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseListen('9464', false)).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListen('[::1]:9464', false)).toEqual({ host: '::1', port: 9464 });
    expect(parseListen('localhost:1', false)).toEqual({ host: 'localhost', port: 1 });
    expect(() => parseListen('0.0.0.0:9464', false)).toThrow(/not a loopback address.*--metrics-allow-remote/);
    expect(parseListen('0.0.0.0:9464', true)).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(() => parseListen('127.0.0.1:99999', false)).toThrow(/--metrics-listen/);
    expect(() => parseListen('nonsense', false)).toThrow(/not host:port/);
  });

  it('watch refuses a non-loopback address: exit 2, nothing done', async () => {
    const r = await runCli(['watch', '--metrics-listen', '0.0.0.0:9464', '--base-url', 'http://127.0.0.1:9', '--db', `${tempDir()}/m.db`], {
      env: { CAMPAIGN_SYNC_API_KEY: 'k' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^campaign-sync: --metrics-listen: 0\.0\.0\.0 is not a loopback address/);
  });

  it('serves the metrics and /healthz after a pass (port 0, bound address logged)', async () => {
    const s = await sim({ campaigns: 2, records: 30 });
    const run = startCli(
      ['watch', '--json', '--interval', '1h', '--metrics-listen', '127.0.0.1:0', '--base-url', s.url, '--db', `${tempDir()}/m.db`],
      { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } },
    );
    try {
      await run.waitFor(/"pass":1/);
      const url = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(run.stderr())?.[1];
      expect(url).toBeDefined();
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      const pass = JSON.parse(run.stdout().trim().split('\n')[0] as string) as { requests: number; records: number };
      const requests = [...text.matchAll(/^campaign_sync_requests_total\{[^}]*status="200"[^}]*\} (\d+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
      expect(requests).toBe(pass.requests);
      expect(text).toMatch(/^campaign_sync_requests_total\{endpoint="\/v1\/campaigns",status="200"\} 1$/m);
      const written = [...text.matchAll(/^campaign_sync_records_written_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      expect(written).toBe(pass.records);
      expect(text).toMatch(
        /^campaign_sync_last_success_timestamp_seconds\{stream="[^"]+",campaign_id="[^"]+",endpoint="session",report_type=""\} \d+/m,
      );
      expect(text).toMatch(/^campaign_sync_passes_total\{result="ok"\} 1$/m);
      expect(text).toMatch(/^campaign_sync_pass_duration_seconds \d/m);
      expect(text).toMatch(/^campaign_sync_rate_limited_total 0$/m);
      expect(text).toMatch(/^campaign_sync_budget_wait_seconds_total \d/m);
      expect(text).toMatch(/^# TYPE campaign_sync_retries_total counter$/m);
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', exit_code: 0, healthy: 2, streams: 2 });
      expect((await fetch(`${url}/nothing`)).status).toBe(404);
    } finally {
      run.child.kill('SIGTERM');
    }
    expect((await run.exited).code).toBe(0);
  });
});
