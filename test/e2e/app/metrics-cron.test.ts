/**
 * `pull --metrics-file` from cron, as node_exporter's textfile collector and Prometheus see it: three
 * pulls five minutes apart (each a process whose clock is set to its cron tick, near 1970-01-01T01:00
 * so that the times it writes are promtool's), one stream failing from its first pass, then a pull
 * with the service down. Under umask 022 another user reads the file; its passes counter reads 1, 2,
 * 3; the failing stream has a health sample 0 and a last success 0; and the rules docs/operating.md
 * ships fire for it, for the healthy streams once they are stale, and for the failed pass, under
 * `promtool test rules` fed the files as node_exporter would serve them, scrape after scrape.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cli, tempDir } from '../../helpers/index.js';
import { sharedSim } from '../../helpers/shared-sim.js';
import { hasProgram, needs } from '../../helpers/tools.js';

const CLOCK_OFFSET = pathToFileURL(fileURLToPath(new URL('../../helpers/clock-offset.mjs', import.meta.url))).href;
const OPERATING = fileURLToPath(new URL('../../../docs/operating.md', import.meta.url));

/** nobody (65534 on Debian and most Linux): a user who is not this test's. */
const NOBODY = 65534;

/** The cron ticks, in seconds since the epoch: 60, 65, 70 and 75 minutes. */
const TICKS = [3600, 3900, 4200, 4500];

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

let saved: number | undefined;
afterEach(() => {
  if (saved !== undefined) process.umask(saved);
  saved = undefined;
});

/** The simulator behind a front server that fails one campaign's results (404), or everything (503). */
async function front(target: string) {
  const state = { fail: undefined as string | undefined, down: false };
  const server = createServer(async (req, res) => {
    const path = req.url ?? '/';
    const query = new URL(path, 'http://x').searchParams;
    if (state.down || (path.includes('/results') && query.get('campaign_id') === state.fail)) {
      const status = state.down ? 503 : 404;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: state.down ? 'Unavailable' : 'Campaign not found', status_code: status, request_id: randomUUID() },
        }),
      );
      return;
    }
    const upstream = await request(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '' } });
    res.writeHead(upstream.statusCode, { 'content-type': 'application/json' }).end(await upstream.body.text());
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state };
}

/** The samples of a Prometheus text file: `name{labels}` (as written) -> value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** A series' labels, those with an empty value left out (Prometheus drops them). */
function labelsOf(series: string): Record<string, string> {
  const inner = /\{(.*)\}$/.exec(series)?.[1] ?? '';
  const labels: Record<string, string> = {};
  for (const m of inner.matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) if (m[2] !== '') labels[m[1] as string] = m[2] as string;
  return labels;
}

/** The rules of docs/operating.md: the YAML block of its "Alert rules" section. */
function shippedRules(): string {
  const page = readFileSync(OPERATING, 'utf8');
  const section = page.slice(page.indexOf('\n## Alert rules\n'));
  const block = /\n```yaml\n([\s\S]*?)\n```\n/.exec(section)?.[1];
  expect(block, 'a ```yaml block under "## Alert rules"').toBeDefined();
  return `${block}\n`;
}

interface Rule {
  alert: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The alerting rules of the YAML block, read by the few shapes it uses (checked: promtool reads the same text). */
function rulesOf(yaml: string): Rule[] {
  const rules: Rule[] = [];
  let map: Record<string, string> | undefined;
  for (const line of yaml.split('\n')) {
    const alert = /^\s+- alert: (\S+)$/.exec(line);
    if (alert) rules.push({ alert: alert[1] as string, labels: {}, annotations: {} });
    const rule = rules.at(-1);
    if (/^\s+labels:$/.test(line)) map = rule?.labels;
    else if (/^\s+annotations:$/.test(line)) map = rule?.annotations;
    else if (/^\s+(expr|for|- alert):/.test(line)) map = undefined;
    const pair = /^\s{10}([a-z_]+): (.*)$/.exec(line);
    if (pair && map) map[pair[1] as string] = (pair[2] as string).replace(/^"(.*)"$/, '$1');
  }
  return rules;
}

/** An annotation as Prometheus renders it for an alert with `labels` (the rules use `{{ $labels.x }}` alone). */
function render(template: string, labels: Record<string, string>): string {
  const out = template.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, name: string) => labels[name] ?? '');
  expect(out, 'a template this test renders').not.toContain('{{');
  return out;
}

describe('pull --metrics-file from cron', () => {
  it('another user reads it, its counters count 1, 2, 3, a stream failing from its first pass is 0, and the shipped rules fire', async (ctx) => {
    needs(ctx, 'promtool');
    const s = await sharedSim({ campaigns: 3, records: 10 });
    const f = await front(s.url);
    const failing = s.data.campaigns[0]?.id as string;
    f.state.fail = failing;
    saved = process.umask(0o022);
    const dir = tempDir();
    chmodSync(dir, 0o711);
    const textfile = join(dir, 'textfile');
    mkdirSync(textfile, { mode: 0o755 });
    const prom = join(textfile, 'campaign_sync.prom');
    const db = join(dir, 'm.db');
    const asNobody = process.getuid?.() === 0 && hasProgram('setpriv');

    const files: Array<Map<string, number>> = [];
    for (const [k, tick] of TICKS.entries()) {
      if (k === 3) f.state.down = true;
      const r = await cli(['pull', '--db', db, '--metrics-file', prom, '--quiet', '--if-idle', '--max-retries', '0'], {
        env: {
          CAMPAIGN_SYNC_BASE_URL: f.url,
          CAMPAIGN_SYNC_API_KEY: s.apiKey,
          NODE_OPTIONS: `--import ${CLOCK_OFFSET}`,
          CAMPAIGN_SYNC_TEST_CLOCK_OFFSET_MS: String(tick * 1000 - Date.now()),
        },
      });
      expect(r.code, r.stderr).toBe(k === 3 ? 5 : 4);
      const text = readFileSync(prom, 'utf8');
      // Readable by others (node_exporter is another user), writable by nobody but the owner.
      expect(statSync(prom).mode & 0o777).toBe(0o644);
      if (asNobody) {
        const read = spawnSync('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', 'cat', prom], {
          encoding: 'utf8',
        });
        expect(read.stderr).toBe('');
        expect(read.stdout).toBe(text);
      }
      files.push(samples(text));
    }

    const [first, second, third, down] = files as [Map<string, number>, Map<string, number>, Map<string, number>, Map<string, number>];
    expect([first, second, third, down].map((m) => m.get('campaign_sync_passes_total{result="partial"}'))).toEqual([1, 2, 3, 3]);
    expect(down.get('campaign_sync_passes_total{result="failed"}')).toBe(1);
    expect(down.get('campaign_sync_last_pass_exit_code')).toBe(5);
    // The campaign list's requests: one per pull, counted on.
    expect([first, third].map((m) => m.get('campaign_sync_requests_total{endpoint="/v1/campaigns",status="200"}'))).toEqual([1, 3]);

    const health = [...third].filter(([k]) => k.startsWith('campaign_sync_stream_healthy{'));
    expect(health.length).toBe(3);
    const bad = health.filter(([k]) => labelsOf(k).campaign_id === failing);
    expect(bad.map(([, v]) => v)).toEqual([0]);
    expect(health.filter(([k]) => labelsOf(k).campaign_id !== failing).map(([, v]) => v)).toEqual([1, 1]);
    const series = (name: string, m: Map<string, number>) => [...m].filter(([k]) => k.startsWith(`${name}{`));
    for (const [k, v] of series('campaign_sync_last_success_timestamp_seconds', third)) {
      if (labelsOf(k).campaign_id === failing) expect(v).toBe(0);
      else expect(v).toBeGreaterThanOrEqual(TICKS[2] as number);
    }
    // The failing stream's attempts are its failures: the third at the third tick.
    const attempts = series('campaign_sync_last_attempt_timestamp_seconds', third).filter(([k]) => labelsOf(k).campaign_id === failing);
    expect(attempts.length).toBe(1);
    expect(attempts[0]?.[1]).toBeGreaterThanOrEqual(TICKS[2] as number);
    expect(attempts[0]?.[1]).toBeLessThan((TICKS[2] as number) + 60);

    // node_exporter serves the newest file at every scrape (each minute) from the minute after its pull.
    const END = 110;
    const fileAt = (minute: number) => TICKS.reduce((at, tick, k) => (minute >= tick / 60 + 1 ? k : at), -1);
    const names = new Set(files.flatMap((m) => [...m.keys()]));
    const input = [...names].map((name) => ({
      series: name,
      values: Array.from({ length: END + 1 }, (_, minute) => {
        const v = files[fileAt(minute)]?.get(name);
        return v === undefined ? '_' : String(v);
      }).join(' '),
    }));

    const yaml = shippedRules();
    const rules = rulesOf(yaml);
    expect(rules.map((r) => r.alert)).toEqual([
      'CampaignSyncStreamStale',
      'CampaignSyncStreamFailing',
      'CampaignSyncStreamNeverSynced',
      'CampaignSyncPassFailed',
    ]);
    const streamSeries = health.map(([k]) => labelsOf(k));
    const failingStream = streamSeries.filter((l) => l.campaign_id === failing);
    const healthy = streamSeries.filter((l) => l.campaign_id !== failing);
    const expected = (alert: string, each: Array<Record<string, string>>) => {
      const rule = rules.find((r) => r.alert === alert) as Rule;
      return each.map((labels) => {
        const all = { ...labels, ...rule.labels, alertname: alert };
        return {
          exp_labels: { ...labels, ...rule.labels },
          exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, t]) => [k, render(t, all)])),
        };
      });
    };
    // 72m: the failing stream, failing and never synced since 61m, fires; nothing is stale; the passes are partial (4).
    // 90m: the service down since 76m: the failed passes fire too. 101m: the healthy streams' last success (70m) is over 30 minutes old.
    const at: Record<string, Record<string, Array<Record<string, string>>>> = {
      '66m': { CampaignSyncStreamStale: [], CampaignSyncStreamFailing: [], CampaignSyncStreamNeverSynced: [], CampaignSyncPassFailed: [] },
      '72m': {
        CampaignSyncStreamStale: [],
        CampaignSyncStreamFailing: failingStream,
        CampaignSyncStreamNeverSynced: failingStream,
        CampaignSyncPassFailed: [],
      },
      '90m': {
        CampaignSyncStreamStale: [],
        CampaignSyncStreamFailing: failingStream,
        CampaignSyncStreamNeverSynced: failingStream,
        CampaignSyncPassFailed: [{}],
      },
      '101m': {
        CampaignSyncStreamStale: healthy,
        CampaignSyncStreamFailing: failingStream,
        CampaignSyncStreamNeverSynced: failingStream,
        CampaignSyncPassFailed: [{}],
      },
    };
    const test = {
      rule_files: ['rules.yml'],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: input,
          alert_rule_test: Object.entries(at).flatMap(([time, byAlert]) =>
            Object.entries(byAlert).map(([alertname, each]) => ({ eval_time: time, alertname, exp_alerts: expected(alertname, each) })),
          ),
        },
      ],
    };
    writeFileSync(join(dir, 'rules.yml'), yaml);
    writeFileSync(join(dir, 'test.yml'), JSON.stringify(test, null, 1));
    const check = spawnSync('promtool', ['check', 'rules', 'rules.yml'], { cwd: dir, encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    const run = spawnSync('promtool', ['test', 'rules', 'test.yml'], { cwd: dir, encoding: 'utf8' });
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });
});
