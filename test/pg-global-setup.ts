/**
 * One PostgreSQL server for the whole run (test/helpers/pg-server.ts), for the PostgreSQL tests
 * (test/component/store/pg/, test/contract/). CAMPAIGN_SYNC_TEST_PG_URL, when set, names a server of the developer's own
 * instead. A focused run that selects no PostgreSQL test file starts nothing.
 *
 * When no server can be started, CAMPAIGN_SYNC_TEST_PG_ERROR says why: the PostgreSQL tests then
 * fail under CI=true and are skipped, with that message, elsewhere (test/helpers/pg.ts).
 */
import { startPgServer } from './helpers/pg-server.js';

function selectsPgTests(): boolean {
  const i = process.argv.findIndex((a) => a === 'run' || a.endsWith('vitest.mjs'));
  const args = process.argv.slice(i + 1);
  // File filters only: an argument right after a flag may be that flag's value (`--project slow`),
  // and a doubt starts the server (a few seconds) rather than failing the PostgreSQL tests.
  const filters = args.filter(
    (a, j) => !a.startsWith('-') && a !== 'run' && !(j > 0 && args[j - 1]?.startsWith('-') && !args[j - 1]?.includes('=')),
  );
  // The mirror contract (test/contract/) runs its cases against PostgreSQL too.
  return filters.length === 0 || filters.some((f) => f.includes('pg') || f.includes('contract'));
}

export default async function setup(): Promise<(() => void) | undefined> {
  // Each project may inherit this setup: the first call starts the server, the others reuse it.
  if (process.env.CAMPAIGN_SYNC_TEST_PG_URL || process.env.CAMPAIGN_SYNC_TEST_PG_ERROR) return undefined;
  if (!selectsPgTests()) {
    process.env.CAMPAIGN_SYNC_TEST_PG_ERROR = 'no PostgreSQL test file was selected';
    return undefined;
  }
  try {
    const server = await startPgServer();
    process.env.CAMPAIGN_SYNC_TEST_PG_URL = server.url;
    return () => server.stop();
  } catch (err) {
    process.env.CAMPAIGN_SYNC_TEST_PG_ERROR = (err as Error).message;
    // One line for the whole run; under CI the tests fail instead (test/helpers/pg.ts).
    if (process.env.CI !== 'true')
      console.warn(`SKIPPED PostgreSQL tests: ${(err as Error).message} (apt-get install postgresql, or set CAMPAIGN_SYNC_TEST_PG_URL)`);
    return undefined;
  }
}
