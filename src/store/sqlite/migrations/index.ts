/**
 * The SQLite mirror's migrations: MIGRATIONS[i] takes a database from schema version i to i + 1
 * (store/sqlite/schema.ts runs them, each in one transaction).
 *
 * A migration file, once released, never changes: a database a release upgraded must equal one this
 * release upgrades from the same version. So each step is frozen SQL, and where data moves, a small
 * function in its own file. A migration imports nothing from the write path (store/sqlite/upserts.ts,
 * store/model/rows.ts, store/model/compact.ts, store/sqlite/) nor any other store/ file nor another step (a step
 * that read another's text would change with it), only pure, stable helpers of core/
 * (test/component/store/migrations.test.ts checks it). To change the schema, add a file and an entry here.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { V1 } from './v1.js';
import { V2 } from './v2.js';
import { V3 } from './v3.js';
import { V4 } from './v4.js';
import { V5 } from './v5.js';
import { compactV6, V6 } from './v6.js';
import { V7 } from './v7.js';
import { V8 } from './v8.js';
import { V9 } from './v9.js';
import { V10 } from './v10.js';
import { V11 } from './v11.js';
import { requestIdsV12, V12 } from './v12.js';
import { V13 } from './v13.js';
import { reasonsV14, V14 } from './v14.js';
import { V15 } from './v15.js';
import { campaignNumbersV16, V16 } from './v16.js';
import { V17 } from './v17.js';

/** One step: SQL, then code where data moves (it returns how many rows it rewrote). */
export interface Migration {
  sql: string;
  run?: (db: BetterSqlite3.Database) => number;
}

export const MIGRATIONS: readonly Migration[] = [
  { sql: V1 },
  { sql: V2 },
  { sql: V3 },
  { sql: V4 },
  { sql: V5 },
  { sql: V6, run: compactV6 },
  { sql: V7 },
  { sql: V8 },
  { sql: V9 },
  { sql: V10 },
  { sql: V11 },
  { sql: V12, run: requestIdsV12 },
  { sql: V13 },
  { sql: V14, run: reasonsV14 },
  { sql: V15 },
  { sql: V16, run: campaignNumbersV16 },
  { sql: V17 },
];
