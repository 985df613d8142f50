/**
 * One events object per command (core/events.ts): the client reports each attempt, retry and budget
 * wait, the pass each page, stream end and warning; the spinner's counts are formatted only when a
 * spinner is shown.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../../src/app/client.js';
import type { PageEvent, RequestEvent, RetryEvent, StreamDoneEvent } from '../../../src/core/events.js';
import { runPass } from '../../../src/sync/pass.js';
import { commandEvents } from '../../../src/ui/events.js';
import { Output } from '../../../src/ui/output.js';
import { clientConfig, sim } from '../../helpers/index.js';
import { campaignList, mockClient, mockService, passDefaults, testStore } from '../../helpers/mock.js';

describe('the client reports', () => {
  it('every attempt with its status, time and bytes, and each retry', async () => {
    let calls = 0;
    const { agent } = mockService(() => {
      calls++;
      return calls === 1
        ? { status: 503, body: { error: { message: 'busy', status_code: 503, request_id: 'r-1' } } }
        : { body: campaignList({ id: 'c1', type: 'SESSION_COMPLETION' }) };
    });
    const requests: RequestEvent[] = [];
    const retries: RetryEvent[] = [];
    const client = mockClient(agent, {}, { events: { request: (e) => requests.push(e), retry: (e) => retries.push(e) } });
    await client.listCampaigns();
    expect(requests.map((r) => [r.method, r.path, r.attempt, r.status])).toEqual([
      ['GET', '/v1/campaigns', 1, 503],
      ['GET', '/v1/campaigns', 2, 200],
    ]);
    // The event names the request and its request_id beside the reason.
    expect(requests[0]?.error).toBe('503 busy');
    expect(requests[0]?.requestId).toBe('r-1');
    expect(requests[1]?.bytes).toBeGreaterThan(50);
    expect(requests.every((r) => r.ms >= 0)).toBe(true);
    expect(retries).toHaveLength(1);
    expect(retries[0]?.attempt).toBe(1);
    expect(retries[0]?.delayMs).toBeGreaterThan(0);
  });

  it('how long a request waited for the request budget', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const waits: number[] = [];
    const client = createClient(clientConfig(s, { rate: { count: 1, windowMs: 300 } }), {
      events: { budgetWait: (e) => waits.push(e.ms) },
    });
    try {
      await client.listCampaigns();
      expect(waits).toEqual([]);
      await client.listCampaigns();
      expect(waits).toHaveLength(1);
      expect(waits[0]).toBeGreaterThanOrEqual(250);
    } finally {
      await client.close();
    }
  });
});

describe('the pass reports', () => {
  it('each page, each stream as it ends, and warnings', async () => {
    const s = await sim({ campaigns: 2, records: 25, unknownTypeCampaigns: 1 });
    const pages: PageEvent[] = [];
    const done: StreamDoneEvent[] = [];
    const warnings: string[] = [];
    const store = testStore();
    const client = createClient(clientConfig(s));
    try {
      const result = await runPass(
        {
          client,
          sink: store.sink,
          state: store.state,
          events: { page: (e) => pages.push(e), streamDone: (e) => done.push(e), warning: (w) => warnings.push(w) },
        },
        { ...passDefaults, pageSize: 10 },
      );
      expect(pages).toHaveLength(result.streams.reduce((n, st) => n + st.pages, 0));
      expect(pages.reduce((n, p) => n + p.records, 0)).toBe(50);
      expect(pages.at(-1)?.progress.records).toBe(50);
      expect(done.map((d) => d.progress.streamsDone)).toEqual([1, 2]);
      expect(done.every((d) => d.status === 'ok' && d.progress.streams === 2)).toBe(true);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/does not know how to read: skipped/);
    } finally {
      await client.close();
    }
  });
});

describe('commandEvents', () => {
  it('formats no counts when no spinner is shown, and sends warnings and retries through Output', () => {
    const err: string[] = [];
    const streams = { stdout: { write: () => true }, stderr: { write: (t: string) => err.push(t) > 0 } } as never;
    const out = new Output({}, streams, {});
    const idle = { active: false, update: () => expect.unreachable('no spinner, no formatting'), stop() {} };
    const events = commandEvents(out, idle);
    expect(events.page).toBeUndefined();
    expect(events.streamDone).toBeUndefined();
    events.warning?.('careful');
    events.retry?.({
      error: new Error('503 busy'),
      delayMs: 1500,
      attempt: 1,
      maxAttempts: 4,
      method: 'GET',
      path: '/v1/campaigns',
      retryAfter: false,
    });
    expect(err.join('')).toBe('warning: careful\nretrying in 1.5 s: 503 busy\n');
    const shown: string[] = [];
    const spinning = commandEvents(out, { active: true, update: (t) => shown.push(t), stop() {} });
    spinning.page?.({
      stream: { key: 'k', campaignId: 'c', endpoint: 'session', reportType: null },
      records: 3,
      progress: { streamsDone: 1, streams: 4, records: 1234, requests: 9 },
    });
    expect(shown).toEqual(['1/4 streams, 1,234 records, 1 page, 0 requests, 0 s']);
  });
});
