// The CLI as users run it: src/main.ts bundled by esbuild into dist/bundle/, ESM for Node
// 20. One module for the start (main, cli, commander) and chunks for the commands and the parts they
// share, loaded when used: a no-op pull loads 27 files of ours instead of tsc's 66, status 22 instead
// of 33, and commander's CommonJS files are inlined. The files the loader need not resolve, read
// and link save each command 10-15 ms of CPU, more of wall time on a busy machine (bench/process.js).
//
// Dependencies stay external (loaded from node_modules) except those listed in INLINE: the native
// better-sqlite3, and everything only some commands or some runs load (pg, prom-client, ora,
// hyparquet-writer, smol-toml, zod, cli-table3, lossless-json, undici's parts by path). A new
// dependency is external until it is listed here.
//
// The bundle sits two folders below the package root, as dist/core/version.js does: both read
// ../../package.json for our version. tsc's per-file dist/ stays for the tests and benches that
// import modules one by one. `npm run build` runs tsc, then this.
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const INLINE = new Set(['commander']);
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const external = Object.keys(pkg.dependencies).filter((d) => !INLINE.has(d));

/**
 * commander requires node:child_process when it loads, for the executable subcommands we do not use:
 * loading it (with dgram and the child process internals) would cost every start. Its one
 * use, `childProcess.spawn`, gets a stand-in that requires the module when called.
 */
const lazyChildProcess = {
  name: 'lazy-child-process',
  setup(b) {
    b.onResolve({ filter: /^node:child_process$/ }, (args) =>
      /[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process', namespace: 'lazy-child-process' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-child-process' }, () => ({
      contents: "module.exports = { spawn: (...args) => require('node:child_process').spawn(...args) };",
      loader: 'js',
    }));
  },
};

/** Builds dist/bundle/ (emptied first: chunk names change with their content). */
export async function bundle() {
  const outdir = `${root}dist/bundle`;
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    // The compile cache's folder (src/core/compile-cache.ts) is chosen before the rest is compiled: an entry of its own.
    entryPoints: { main: 'src/main.ts', 'compile-cache': 'src/core/compile-cache.ts' },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Dependencies by path (undici/lib/…) are external too.
    external: external.flatMap((d) => [d, `${d}/*`]),
    chunkNames: '[name]-[hash]',
    // Stack traces name src/ files and lines (`CAMPAIGN_SYNC_DEBUG=1` turns source maps on, bin/campaign-sync.js).
    sourcemap: true,
    sourcesContent: false,
    // commander is CommonJS: its require() of node: modules needs a real require in an ES module.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    plugins: [lazyChildProcess],
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await bundle();
