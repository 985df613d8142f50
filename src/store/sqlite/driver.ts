/**
 * better-sqlite3's class, loaded with require: the package is CommonJS, and importing it from an ES
 * module makes Node start its CommonJS export lexer (WebAssembly) to find named exports, a cost at
 * the start of every command that opens a database (docs/performance.md), for a package whose one export is the class.
 *
 * Which release: 12 on Node 20, 13 (installed as `better-sqlite3-v13`) from Node 22 on. 12 wraps its
 * objects in `node::ObjectWrap`, whose Node 24 destructor aborts the process when a statement is
 * collected after Node tore its environment down (`Assertion failed: (env) != nullptr`); 13 is built
 * on Node-API, has no such hook and ships its binaries (nothing to compile for Node 22 or 24), but
 * needs Node 22 and crashes on 20. Both are installed by `npm install`, so no Node version needs a
 * step by hand. The types are 12's, which 13 keeps.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';

/** The package name of the better-sqlite3 release this Node runs. */
export const SQLITE_DRIVER = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-v13' : 'better-sqlite3';

const load = createRequire(import.meta.url);
const Driver = load(SQLITE_DRIVER) as typeof BetterSqlite3;

/**
 * The driver's compiled addon, when it is where the package's build puts it (build/Release) and
 * no build the `bindings` package would prefer sits before it (build/, then build/Debug). Without
 * a `nativeBinding`, the driver asks `bindings` for it, which walks a stack trace to find the
 * package and tries to require each of a dozen places in turn: a visible part of the start of
 * every command that opens a database. Elsewhere, `bindings` still looks.
 */
function builtAddon(): string | undefined {
  const root = dirname(dirname(load.resolve(SQLITE_DRIVER)));
  const [first, debug, release] = ['build', 'build/Debug', 'build/Release'].map((dir) => join(root, dir, 'better_sqlite3.node'));
  if (existsSync(first as string) || existsSync(debug as string)) return undefined;
  return existsSync(release as string) ? release : undefined;
}

const addon = builtAddon();

/** better-sqlite3's Database, handed its addon's path when builtAddon found it. */
export const Database: typeof BetterSqlite3 =
  addon === undefined
    ? Driver
    : new Proxy(Driver, {
        construct: (target, [file, options]: [unknown, BetterSqlite3.Options | undefined]) =>
          Reflect.construct(target, [file, { nativeBinding: addon, ...options }]),
      });
