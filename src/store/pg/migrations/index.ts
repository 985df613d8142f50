/**
 * The PostgreSQL mirror's migrations: PG_MIGRATIONS[i] takes a schema from version i to i + 1
 * (store/pg/schema.ts runs them, in one transaction).
 *
 * A migration file, once released, never changes: a mirror a release upgraded must equal one this
 * release upgrades from the same version. So each step is frozen SQL that imports nothing from the
 * write path (store/pg/upserts.ts, store/pg/compact.ts, store/model/rows.ts, store/sqlite/), nor any other
 * store/ file, nor another step (a step that read another's text would change with it): only core/
 * (test/component/store/migrations.test.ts checks it). To change the schema, add a file and an entry here.
 */
import { V1 } from './v1.js';
import { V2 } from './v2.js';
import { V3 } from './v3.js';
import { V4 } from './v4.js';
import { V5 } from './v5.js';
import { V6 } from './v6.js';
import { V7 } from './v7.js';
import { V8 } from './v8.js';
import { V9 } from './v9.js';
import { V10 } from './v10.js';
import { V11 } from './v11.js';
import { V12 } from './v12.js';
import { V13 } from './v13.js';
import { V14 } from './v14.js';
import { V15 } from './v15.js';
import { V16 } from './v16.js';
import { V17 } from './v17.js';
import { V18 } from './v18.js';
import { V19 } from './v19.js';

export const PG_MIGRATIONS: readonly string[] = [V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16, V17, V18, V19];
