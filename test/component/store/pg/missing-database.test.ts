/**
 * A PostgreSQL URL naming a database the server does not have is a mistake in the set-up, not a
 * failure of storage: exit 2, one line naming the database, the server and where the URL came from,
 * and the `createdb` that makes it; the password never shows.
 */
import { expect, it } from 'vitest';
import { describePg, PG_URL } from '../../../helpers/pg.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

/** The test server's URL with another database name. */
function otherDatabase(name: string): string {
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

describePg('a database that does not exist', () => {
  it('is exit 2 with the createdb that makes it, for a command that creates the mirror and one that reads it', async () => {
    const url = otherDatabase('campaign_sync_no_such_db');
    const { hostname, port, username, password } = new URL(url);
    const createdb = `createdb -h ${hostname} -p ${port}${username ? ` -U ${username}` : ''} campaign_sync_no_such_db`;
    const s = await sharedSim({ records: 2 });
    const pull = await runCli(['pull'], { env: { CAMPAIGN_SYNC_DB: url, CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey } });
    expect(pull.code).toBe(2);
    expect(pull.stderr).toBe(
      `campaign-sync: CAMPAIGN_SYNC_DB: the database "campaign_sync_no_such_db" does not exist on the server at ${hostname}:${port} (3D000); create it (\`${createdb}\`) or name an existing one in the URL\n`,
    );
    const status = await runCli(['status'], { env: { CAMPAIGN_SYNC_DB: url } });
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/^campaign-sync: CAMPAIGN_SYNC_DB: the database "campaign_sync_no_such_db" does not exist .*createdb /);
    if (password) expect(pull.stderr + status.stderr).not.toContain(decodeURIComponent(password));
  });
});
