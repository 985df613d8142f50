/**
 * better-sqlite3's class, loaded with require: the package is CommonJS, and importing it from an ES
 * module makes Node start its CommonJS export lexer (WebAssembly) to find named exports, about 10 ms
 * of the start of every command that opens a database, for a package whose one export is the class.
 *
 * Which release: 12 on Node 20, 13 (installed as `better-sqlite3-v13`) from Node 22 on. 12 wraps its
 * objects in `node::ObjectWrap`, whose Node 24 destructor aborts the process when a statement is
 * collected after Node tore its environment down (`Assertion failed: (env) != nullptr`); 13 is built
 * on Node-API, has no such hook and ships its binaries (nothing to compile for Node 22 or 24), but
 * needs Node 22 and crashes on 20. Both are installed by `npm install`, so no Node version needs a
 * step by hand. The types are 12's, which 13 keeps.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** The package name of the better-sqlite3 release this Node runs. */
export const SQLITE_DRIVER = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-v13' : 'better-sqlite3';

export const Database = createRequire(import.meta.url)(SQLITE_DRIVER) as typeof BetterSqlite3;
