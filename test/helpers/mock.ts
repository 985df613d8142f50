import { join } from 'node:path';
import { MockAgent } from 'undici';
import { RequestBudget } from '../../src/api/budget.js';
import { ApiClient, type ClientOptions } from '../../src/api/client.js';
import type { ApiConfig } from '../../src/config/config.js';
import type { Clock } from '../../src/core/clock.js';
import type { PageSink } from '../../src/store/port.js';
import { SqliteCheckpoints } from '../../src/store/sqlite/checkpoints.js';
import { openDatabase } from '../../src/store/sqlite/db.js';
import { NdjsonSink } from '../../src/store/sqlite/ndjson/sink.js';
import { SqliteSink } from '../../src/store/sqlite/sink.js';
import { type PassOptions, runPass } from '../../src/sync/pass.js';
import { tempDir } from './index.js';

export const ORIGIN = 'https://api.test';
export const CAMPAIGN = '11111111-1111-4111-8111-111111111111';
export const ROLE_CAMPAIGN = '22222222-2222-4222-8222-222222222222';

export interface MockReply {
  status?: number;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A MockAgent standing in for the service; every request goes through `handler`. No real network. */
export function mockService(handler: (url: URL, headers: Record<string, string>) => MockReply) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const calls: URL[] = [];
  agent
    .get(ORIGIN)
    .intercept({ path: () => true, method: 'GET' })
    .reply((opts) => {
      const url = new URL(opts.path, ORIGIN);
      calls.push(url);
      const r = handler(url, (opts.headers ?? {}) as Record<string, string>);
      return {
        statusCode: r.status ?? 200,
        data: typeof r.body === 'string' ? r.body : JSON.stringify(r.body ?? {}),
        responseOptions: { headers: { 'content-type': 'application/json', ...r.headers } },
      };
    })
    .persist();
  return { agent, calls };
}

export function apiConfig(over: Partial<ApiConfig> = {}): ApiConfig {
  return {
    baseUrl: new URL(ORIGIN),
    apiKey: 'secret-test-key',
    rate: { count: 10_000, windowMs: 1000 },
    timeoutMs: 5000,
    maxRetries: 3,
    maxRetryWaitMs: 120_000,
    ...over,
  };
}

export function mockClient(agent: MockAgent, over: Partial<ApiConfig> = {}, opts: Partial<ClientOptions> = {}, clock?: Clock): ApiClient {
  const config = apiConfig(over);
  return new ApiClient(config, { budget: new RequestBudget(config.rate, clock), dispatcher: agent, random: () => 0, clock, ...opts });
}

/** A fresh database with its state and a sink. */
export function testStore(format: 'sqlite' | 'ndjson' = 'sqlite') {
  const dir = tempDir();
  const dbPath = join(dir, 'mirror.db');
  const db = openDatabase(dbPath);
  const state = new SqliteCheckpoints(db);
  const outDir = join(dir, 'out');
  const sink: PageSink = format === 'ndjson' ? new NdjsonSink(db, state, outDir) : new SqliteSink(db, state);
  return { dir, dbPath, outDir, db, state, sink };
}

export const passDefaults: PassOptions = { campaigns: [], reportType: 'DETAILED', pageSize: 100, concurrency: 4, full: false };

export function pass(client: ApiClient, store: ReturnType<typeof testStore>, opts: Partial<PassOptions> = {}) {
  return runPass({ client, sink: store.sink, state: store.state }, { ...passDefaults, ...opts });
}

/** A campaign list for the mock service. */
export function campaignList(...items: Array<{ id: string; type: string; name?: string }>) {
  return {
    data: items.map((c) => ({
      id: c.id,
      name: c.name ?? `c-${c.id.slice(0, 4)}`,
      display_name: 'Display',
      type: c.type,
      created_at: '2026-01-01T00:00:00Z',
    })),
  };
}

/** A minimal session record. */
export function sessionRecord(orderIndex: number | string | bigint, id = `rec-${orderIndex}`, campaignId = CAMPAIGN) {
  return {
    id,
    score: 3.5,
    campaign: { id: campaignId, name: 'x' },
    user: { id: 'u', email: 'u@example.com' },
    eval_results: [],
    order_index: orderIndex,
  };
}

/** `sink` with its own commitPage: every other call goes to `sink` (tests that slow or fail pages). */
export function withCommitPage(sink: PageSink, commitPage: PageSink['commitPage']): PageSink {
  return {
    commitPage,
    settle: (id) => sink.settle(id),
    campaigns: (list) => sink.campaigns(list),
    storedIds: (id) => sink.storedIds(id),
    prune: (id, ids) => sink.prune(id, ids),
    openStream: (id) => sink.openStream(id),
    endStream: (id, error) => sink.endStream(id, error),
    driftGone: (id, items) => sink.driftGone(id, items),
    flush: () => sink.flush(),
    close: () => sink.close(),
    moved: () => sink.moved(),
    get failure() {
      return sink.failure;
    },
    leases: sink.leases,
  };
}
