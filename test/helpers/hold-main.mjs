// Preloaded with `--import` (NODE_OPTIONS): holds the load of the CLI's main bundle
// (dist/bundle/main.js) until the file named by HOLD_MAIN_GATE exists, after creating
// `<gate>.loading`. A test can then send signals while the CLI loads, after the launcher
// (bin/campaign-sync.js) started and before main() installed its own handlers.
import { register } from 'node:module';

const gate = process.env.HOLD_MAIN_GATE;
const hook = `
import { existsSync, writeFileSync } from 'node:fs';
let gate;
export function initialize(data) { gate = data.gate; }
export async function load(url, context, next) {
  if (url.endsWith('/dist/bundle/main.js')) {
    writeFileSync(gate + '.loading', '');
    while (!existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return next(url, context);
}`;
if (gate) register(`data:text/javascript,${encodeURIComponent(hook)}`, { data: { gate } });
