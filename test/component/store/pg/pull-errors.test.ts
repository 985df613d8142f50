/**
 * A pull's errors that only a PostgreSQL mirror has: a server that cannot be reached or refuses the
 * login (exit 74, one line naming the database, never the password), and flags that do not go with
 * a postgres:// URL (exit 2). What a pull stores, on every kind, is test/contract/pull.test.ts's.
 */
import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { sim } from '../../../helpers/index.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';
import { TEST_PG_PASSWORD } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';

describePg("a pull's errors with PostgreSQL", () => {
  it('an unreachable server or a refused login is exit 74, one line naming the database, never the password', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const u = new URL(PG_URL);
    const closed = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const port = (srv.address() as { port: number }).port;
        srv.close(() => resolve(port));
      });
    });
    const wrong = new URL(PG_URL);
    wrong.password = 'not-the-password-4d2';
    const down = new URL(PG_URL);
    down.port = String(closed);
    // Through the environment: on the command line, a URL with a password is warned about first (url.test.ts).
    for (const url of [down.toString(), wrong.toString()]) {
      const r = await runCli(['pull', '--base-url', s.url], { env: { ...env.env, CAMPAIGN_SYNC_DB: url } });
      expect(r.code).toBe(74);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`postgres://${u.username}@127.0.0.1:`);
      expect(r.stdout + r.stderr).not.toContain(TEST_PG_PASSWORD);
      expect(r.stdout + r.stderr).not.toContain('not-the-password-4d2');
    }
  });

  it('--format ndjson with a postgres:// --db, or a bad --pg-schema, is a usage error (exit 2)', async () => {
    const s = await sim({ campaigns: 1, records: 5 });
    const env = { env: { CAMPAIGN_SYNC_API_KEY: s.apiKey } };
    const a = await runCli(['pull', '--db', PG_URL, '--pg-schema', freshSchema(), '--format', 'ndjson', '--base-url', s.url], env);
    expect(a.code).toBe(2);
    const b = await runCli(['pull', '--db', PG_URL, '--pg-schema', 'Bad-Name', '--base-url', s.url], env);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('--pg-schema');
  });
});
