// Preloaded with `--import` (NODE_OPTIONS): holds the CLI's main bundle (dist/bundle/main.js) at the
// start of its evaluation until the file named by HOLD_MAIN_GATE exists, after creating
// `<gate>.loading`. A test can then send signals while the CLI loads: after the launcher
// (bin/campaign-sync.js) started, before main() installed its own handlers. The wait is a top-level
// await put before the bundle's code, so the event loop runs meanwhile (as it does between the
// steps of a real load); a hook that waited itself would block the main thread on Node 24, where
// the loader waits for its hooks synchronously.
import { register } from 'node:module';

const gate = process.env.HOLD_MAIN_GATE;
const hook = `
let gate;
export function initialize(data) { gate = data.gate; }
export async function load(url, context, next) {
  const loaded = await next(url, context);
  if (!url.endsWith('/dist/bundle/main.js')) return loaded;
  const hold = 'import { existsSync as holdExists$, writeFileSync as holdWrite$ } from "node:fs";' +
    'holdWrite$(' + JSON.stringify(gate + '.loading') + ', "");' +
    'while (!holdExists$(' + JSON.stringify(gate) + ')) await new Promise((resolve) => setTimeout(resolve, 10));\\n';
  return { ...loaded, source: hold + String(loaded.source) };
}`;
if (gate) register(`data:text/javascript,${encodeURIComponent(hook)}`, { data: { gate } });
