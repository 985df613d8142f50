/**
 * Builds dist/ once before any test runs, as `npm run build` does: tsc's modules (benches and a few
 * tests import them) and the bundle (scripts/bundle.js) that bin/campaign-sync.js runs, which the e2e
 * tests spawn, so a run against a stale build would test old code. Also makes `npx vitest` enough.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  // Each project may inherit this setup; one build per vitest process is enough.
  if (process.env.CAMPAIGN_SYNC_TEST_BUILT === '1') return;
  // The request budget's ledger (store/budget-ledger.ts) lives in the user's state folder: the
  // tests (and the CLIs they spawn) get a folder of their own, never the tester's.
  process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'campaign-sync-state-'));
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/bundle.js'], { cwd: root, stdio: 'inherit' });
  process.env.CAMPAIGN_SYNC_TEST_BUILT = '1';
}
