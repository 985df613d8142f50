// Preloaded with `--import` (NODE_OPTIONS): appends every module the process loads to the file named
// by LOADED_MODULES_FILE, one URL or path a line: ES modules through a loader hook as they load,
// CommonJS modules (createRequire included) from the require cache at exit, and Node's own modules
// (`builtin internal/…`) from process.moduleLoadList.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';

const file = process.env.LOADED_MODULES_FILE;
const hook = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function load(url, context, next) {
  appendFileSync(file, url + '\\n');
  return next(url, context);
}`;
if (file) {
  register(`data:text/javascript,${encodeURIComponent(hook)}`, { data: { file } });
  process.on('exit', () => {
    const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => `builtin ${m.slice(13)}`);
    appendFileSync(file, [...Object.keys(Module._cache), ...builtins].map((p) => `${p}\n`).join(''));
  });
}
