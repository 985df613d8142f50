/** A 100 MiB gzip bomb through MockAgent: an invalid-body error at the 1 MiB cap, with flat memory. */
import { gzipSync } from 'node:zlib';
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors.js';
import { CAMPAIGN, mockClient, ORIGIN } from '../../helpers/mock.js';

describe('a gzip bomb', () => {
  it('100 MiB of zeros is an invalid-body error at the cap, not an out-of-memory', async () => {
    const bomb = gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent
      .get(ORIGIN)
      .intercept({ path: () => true, method: 'GET' })
      .reply(() => ({
        statusCode: 200,
        data: bomb,
        responseOptions: { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
      }))
      .persist();
    const before = process.memoryUsage().rss;
    const err = await mockClient(agent, { gzip: true }, { maxBodyBytes: 1024 * 1024 })
      .resultsPage({ endpoint: 'session', campaignId: CAMPAIGN, limit: 100 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).kind).toBe('invalid');
    expect((err as Error).message).toContain('(inflated) is over the 1048576-byte cap');
    // The inflated 100 MiB never sat in memory at once.
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
  });
});
