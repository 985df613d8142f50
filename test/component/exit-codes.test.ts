/**
 * One exit-code policy (errors.ts) for every command: an error's kind decides its code, and a pass's
 * outcomes decide the pass's. `campaigns` against a dead server exits 5, as `pull` does.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  ApiError,
  AuthError,
  DataError,
  ExitCode,
  exitCodeFor,
  exitCodeForPass,
  LockedError,
  NetworkError,
  StorageError,
  UsageError,
} from '../../src/errors.js';
import { tempDir } from '../helpers/index.js';
import { runCli } from '../helpers/run-cli.js';

const req = { method: 'GET', path: '/v1/campaigns' };

describe('exitCodeFor', () => {
  it('maps each kind of failure to its documented code', () => {
    expect(exitCodeFor(new UsageError('x'))).toBe(ExitCode.usage);
    expect(exitCodeFor(new AuthError(req, '401 Unauthorized', { status: 401 }))).toBe(ExitCode.auth);
    expect(exitCodeFor(new NetworkError(req, 'ECONNREFUSED', 'refused'))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(new ApiError(req, '503', { status: 503 }))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(new ApiError(req, '429', { status: 429 }))).toBe(ExitCode.unavailable);
    expect(exitCodeFor(new ApiError(req, '404 Not found', { status: 404 }))).toBe(ExitCode.partial);
    expect(exitCodeFor(new ApiError(req, '200 but not JSON', { invalid: true }))).toBe(ExitCode.partial);
    expect(exitCodeFor(new DataError('bad record'))).toBe(ExitCode.partial);
    expect(exitCodeFor(new StorageError('disk full'))).toBe(ExitCode.storage);
    expect(exitCodeFor(Object.assign(new Error('SQLITE_FULL'), { code: 'SQLITE_FULL' }))).toBe(ExitCode.storage);
    expect(exitCodeFor(new LockedError('held'))).toBe(ExitCode.locked);
    expect(exitCodeFor(new AbortedError())).toBe(ExitCode.ok);
    expect(exitCodeFor(new TypeError('a bug'))).toBe(ExitCode.internal);
  });

  it('an answer that is no valid answer is `invalid`, never mistaken for a failing service', () => {
    const invalid = new ApiError(req, '200 but the body is not JSON', { invalid: true });
    expect(invalid.kind).toBe('invalid');
    expect(invalid.status).toBeUndefined();
    expect(new NetworkError(req, 'ETIMEDOUT', 't').kind).toBe('unavailable');
    expect(new ApiError(req, '403', { status: 403 }).kind).toBe('rejected');
    expect(new DataError('x').kind).toBe('invalid');
  });
});

describe('exitCodeForPass', () => {
  const ok = { status: 'ok' as const };
  const down = { status: 'failed' as const, errorKind: 'unavailable' as const };
  const gone = { status: 'failed' as const, errorKind: 'rejected' as const };
  it.each([
    ['every stream ok', [ok, ok], false, 0],
    ['no streams', [], false, 0],
    ['some failed', [ok, down], false, 4],
    ['all failed, service down', [down, down], false, 5],
    ['all failed, one for a 404', [down, gone], false, 4],
    ['interrupted by a signal', [down, down], true, 0],
  ])('%s', (_name, streams, interrupted, code) => {
    expect(exitCodeForPass({ streams, interrupted })).toBe(code);
  });
});

describe('every command against a dead server', () => {
  it('campaigns exits 5, as pull does', async () => {
    // A port that was free a moment ago: connection refused.
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const env = { CAMPAIGN_SYNC_BASE_URL: `http://127.0.0.1:${port}`, CAMPAIGN_SYNC_API_KEY: 'k' };
    for (const command of ['campaigns', 'pull']) {
      const run = await runCli([command, '--max-retries', '0', '--db', join(tempDir(), 'm.db')], { env });
      expect(run.code, `${command}: ${run.stderr}`).toBe(ExitCode.unavailable);
      expect(run.stderr).toMatch(/ECONNREFUSED/);
    }
  });
});
