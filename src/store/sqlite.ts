/**
 * better-sqlite3's class, loaded with require (issue 15). The package is CommonJS: importing it from
 * an ES module makes Node start its CommonJS export lexer (WebAssembly) to find named exports, about
 * 10 ms of the start of every command that opens a database, for a package whose one export is the
 * class. The types are better-sqlite3's own (`BetterSqlite3.Database`).
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
